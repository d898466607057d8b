package sink

// The settings marker: one object per output folder,
// <Prefix>/_s3once_settings, that records the settings a file's bytes and
// names depend on. A rerun with other settings is refused before it
// commits anything (ErrSettingsChanged), by the preflight and by the sink.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/settingsmarker"
)

// ErrSettingsChanged is wrapped by the error of a run, or of Preflight, whose
// byte-affecting settings differ from those recorded in the output folder's
// settings marker. Its message carries the stable code
// errcode.SettingsChanged.
var ErrSettingsChanged = errcode.New(errcode.SettingsChanged, "the output folder was written with other settings")

// SettingChange is one setting that differs from the folder's marker.
type SettingChange struct {
	// Setting names it as Config does ("Compression", "Shards", ...).
	Setting string
	// Was is the value recorded in the folder; Now this run's. They are
	// whole here, digests and templates too, where the error's message
	// gives only the setting's name (see SettingsChangedError).
	Was, Now string
}

// SettingsChangedError is the error of a run, or of Preflight, that finds
// the output folder written with other byte-affecting settings. It wraps
// ErrSettingsChanged.
//
// Its message is one short line: it names each setting that changed, with
// its recorded and its new value where the value is a plain setting
// ("Compression gzip -> zstd"), and by name alone where the value is a
// digest or a template (the canary digests, the file-name template), which
// follow from the plain settings. The whole values are in Changes, and in
// the folder's settings marker (<Prefix>/_s3once_settings) for the
// recorded ones; the message has no verbose form.
type SettingsChangedError struct {
	Bucket, Prefix string
	// Changes lists every setting that differs, in the marker's order.
	Changes []SettingChange
	// Done says what this run did about it ("nothing of this run was
	// committed ..."); empty from Preflight, which writes nothing.
	Done string
	// Unmarked, when set, is an s3once file of a folder that has no
	// settings marker: an earlier release wrote it, as output version 1.
	Unmarked string
}

func (e *SettingsChangedError) Error() string {
	var b strings.Builder
	if e.Unmarked != "" {
		fmt.Fprintf(&b, "s3once sink: s3://%s/%s holds files of an earlier s3once release and no settings marker (s3://%s/%s, for one), so it is of output version %s:",
			e.Bucket, ownkeys.Folder(e.Prefix), e.Bucket, e.Unmarked, legacyVersion)
	} else {
		fmt.Fprintf(&b, "s3once sink: s3://%s/%s has other settings:", e.Bucket, ownkeys.Folder(e.Prefix))
	}
	var named []string // changed settings shown by name alone
	shownOne := false
	for _, c := range e.Changes {
		if !plainValue(c) {
			named = append(named, c.Setting)
			continue
		}
		if shownOne {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %s -> %s", c.Setting, shown(c.Was), shown(c.Now))
		shownOne = true
	}
	switch {
	case len(named) > 0 && shownOne:
		b.WriteString(" (and " + strings.Join(named, ", ") + ")")
	case len(named) > 0:
		b.WriteString(" " + strings.Join(named, ", "))
	}
	b.WriteString("; ")
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	for _, c := range e.Changes {
		if c.Setting == settingLabels["output-version"] && c.Was != "" {
			fmt.Fprintf(&b, "to go on writing this folder as it was written, set OutputVersion: %s in the Config; ", c.Was)
		}
	}
	b.WriteString(freshPrefix(e.Prefix) + " " + errcode.SettingsChanged.Token())
	return b.String()
}

// plainValue reports whether a change's values are short enough to show
// in SettingsChangedError's one line: not a digest or a template (named
// by namedOnly), nor a value of a setting this build does not know that
// runs long.
func plainValue(c SettingChange) bool {
	const longest = 32
	return !namedOnly[c.Setting] && len(c.Was) <= longest && len(c.Now) <= longest
}

// namedOnly are the labels of the settings whose values are digests or
// templates: SettingsChangedError's message names them without values.
var namedOnly = map[string]bool{
	settingLabels["compression-canary"]: true, settingLabels["parquet-canary"]: true,
	settingLabels["file-names"]: true, settingLabels["compression-library"]: true, settingLabels["parquet-library"]: true,
}

func (e *SettingsChangedError) Unwrap() error { return ErrSettingsChanged }

// ErrSettingsDamaged is wrapped by the error of a run, or of Preflight,
// that finds the output folder's settings marker damaged: it decodes, but
// lacks a setting every marker of its version holds for its format and
// compression (cut at a line boundary, reduced to its header line, or
// edited), so what it records cannot be compared. Its message carries the
// stable code errcode.SettingsDamaged. docs/operating.md has the table of
// the settings a marker must hold.
var ErrSettingsDamaged = settingsmarker.ErrDamaged

// SettingsDamagedError is the error of a run, or of Preflight, that finds
// the output folder's settings marker damaged. It wraps ErrSettingsDamaged.
type SettingsDamagedError struct {
	// Bucket and Key name the marker.
	Bucket, Key string
	// Missing are the settings the marker lacks; Empty those it leaves
	// empty where its format and compression give them a value.
	Missing, Empty []string
	// Invalid are the settings whose value no release writes.
	Invalid []string
	// Manifest, when set, is a partition manifest of a folder that has no
	// marker at all: manifests are written only after the marker, so it
	// was deleted.
	Manifest string
	// Done says what this run did about it; empty from Preflight.
	Done string
}

func (e *SettingsDamagedError) Error() string {
	d := settingsmarker.DamagedError{Missing: e.Missing, Empty: e.Empty, Invalid: e.Invalid}
	damage := d.Damage()
	if e.Manifest != "" {
		damage = fmt.Sprintf("is missing, though the partition manifest s3://%s/%s, written only after it, exists (deleted outside s3once)", e.Bucket, e.Manifest)
	}
	done := ""
	if e.Done != "" {
		done = e.Done + "; "
	}
	return fmt.Sprintf("s3once sink: the settings marker s3://%s/%s %s, so this run cannot tell whether the folder's files were written with its settings; %s%s: %v",
		e.Bucket, e.Key, damage, done, settingsmarker.Hint, ErrSettingsDamaged)
}

func (e *SettingsDamagedError) Unwrap() error { return ErrSettingsDamaged }

func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// ---- what the marker records ---------------------------------------------

// fileNames is the file-name template, recorded so that a change of it
// cannot go unnoticed.
const fileNames = "<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF>"

// unknownLibrary stands for a library version the build information does
// not give (a binary built without module support, a codec of the main
// package).
const unknownLibrary = "unknown"

// A setting in the marker: its name there and the Config field it comes from.
var settingLabels = map[string]string{
	"checkpoint-sync-bytes":     "CheckpointBytes' member spacing",
	"compression":               "Compression",
	"compression-canary":        "compression canary",
	"compression-library":       "compression library",
	"file-names":                "file names",
	"format":                    "Format",
	"max-batch-bytes":           "MaxBatchBytes",
	"max-file-bytes":            "MaxFileBytes",
	"max-file-records":          "MaxFileRecords",
	"output-version":            "s3once's output format version",
	"parquet-canary":            "Parquet canary",
	"parquet-compression":       "Parquet.Compression",
	"shard-target-bytes":        "TargetFileBytes",
	"parquet-library":           "Parquet library",
	"parquet-row-group-bytes":   "Parquet.RowGroupBytes",
	"parquet-row-group-records": "Parquet.RowGroupRecords",
	"shards":                    "Shards",
}

// setting is one name and value of a settings marker; markerSettings a
// marker's content, its settings (internal/settingsmarker holds their
// encoding).
type (
	setting        = settingsmarker.Setting
	markerSettings = settingsmarker.Settings
)

func encodeSettings(ms markerSettings) []byte { return settingsmarker.Encode(ms) }

func decodeSettings(b []byte) (markerSettings, error) { return settingsmarker.Decode(b) }

// errSettingsMarker is wrapped by the errors of decodeSettings.
var errSettingsMarker = settingsmarker.ErrInvalid

// maxSettingsBytes bounds a marker (and what is read of one).
const maxSettingsBytes = settingsmarker.MaxBytes

// markerSettings is what the settings marker records for s: every setting
// the bytes or names of a file depend on, besides the records themselves, the
// element type and the Destination function (user code, which a rerun's
// barrier or commit judges by the bytes). A setting that has no effect under
// the others is recorded as "" (the sync spacing without compression, the
// Parquet settings of other formats), so that changing it alone is no
// change.
func (s settings) markerSettings() markerSettings {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	ext := s.fileExt()
	sync, codecLib, codecOut := "", "", ""
	if s.Compression != "none" {
		sync = itoa(s.syncBytes())
		codecLib = codecLibrary(s.Compression)
		codecOut = codecCanary(s.Compression)
	}
	var pqComp, pqLib, pqOut, pqBytes, pqRecords string
	if s.Parquet != nil {
		pqComp, pqBytes, pqRecords = s.Parquet.Compression, itoa(s.Parquet.RowGroupBytes), itoa(s.Parquet.RowGroupRecords)
		pqLib = moduleOf("github.com/parquet-go/parquet-go")
		if pqComp != "none" {
			pqLib += ", " + moduleOf("github.com/klauspost/compress/zstd")
		}
		pqOut = parquetCanary(pqComp)
	}
	// Fixed Shards record the count; automatic sharding records its bound
	// with an "auto:" prefix, so that a marker of a build that knew no
	// automatic sharding (no shard-target-bytes) still differs.
	shards, target := itoa(int64(s.Shards)), ""
	if s.TargetFileBytes > 0 {
		shards, target = "auto:"+shards, itoa(s.TargetFileBytes)
	}
	return markerSettings{
		{Name: "checkpoint-sync-bytes", Value: sync},
		{Name: "compression", Value: s.Compression},
		{Name: "compression-canary", Value: codecOut},
		{Name: "compression-library", Value: codecLib},
		{Name: "file-names", Value: fileNames + ext},
		{Name: "format", Value: s.Format},
		{Name: "max-batch-bytes", Value: itoa(s.MaxBatchBytes)},
		{Name: "max-file-bytes", Value: itoa(s.MaxFileBytes)},
		{Name: "max-file-records", Value: itoa(s.MaxFileRecords)},
		{Name: "output-version", Value: strconv.Itoa(s.OutputVersion)},
		{Name: "parquet-canary", Value: pqOut},
		{Name: "parquet-compression", Value: pqComp},
		{Name: "parquet-library", Value: pqLib},
		{Name: "parquet-row-group-bytes", Value: pqBytes},
		{Name: "parquet-row-group-records", Value: pqRecords},
		{Name: "shard-target-bytes", Value: target},
		{Name: "shards", Value: shards},
	}
}

// fileExt is the extension of the files: the format's, then the codec's.
func (s fileSettings) fileExt() string {
	ext := ""
	if f, err := format.Lookup(s.Format); err == nil {
		ext += f.Extension()
	}
	if c, err := format.LookupCodec(s.Compression); err == nil {
		ext += c.Extension()
	}
	return ext
}

// codecLibrary names the module, with its version, that implements the
// codec registered under name: klauspost/compress for the built-in ones,
// the codec type's module for a program's own.
func codecLibrary(name string) string {
	switch name {
	case "gzip", "zstd":
		return moduleOf("github.com/klauspost/compress/" + name)
	}
	c, err := format.LookupCodec(name)
	if err != nil {
		return unknownLibrary
	}
	t := reflect.TypeOf(c)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return moduleOf(t.PkgPath())
}

// readBuildInfo is this binary's build information, read once (nil when
// the binary has none).
var readBuildInfo = sync.OnceValue(func() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
})

// moduleOf names the module that holds the package pkg in this build, as
// "path version" (the replacement's version when the module is replaced),
// or unknownLibrary.
func moduleOf(pkg string) string {
	buildInfo := readBuildInfo()
	if buildInfo == nil || pkg == "" {
		return unknownLibrary
	}
	var best *debug.Module
	for _, m := range append([]*debug.Module{&buildInfo.Main}, buildInfo.Deps...) {
		if m.Path == "" || (pkg != m.Path && !strings.HasPrefix(pkg, m.Path+"/")) {
			continue
		}
		if best == nil || len(m.Path) > len(best.Path) {
			best = m
		}
	}
	if best == nil {
		return unknownLibrary
	}
	v := best.Version
	if best.Replace != nil {
		v = best.Replace.Version
	}
	if v == "" || v == "(devel)" {
		v = unknownLibrary
	}
	return best.Path + " " + v
}

// informational are settings the marker records for an operator's
// information only, never compared: the module versions of the libraries.
// A test binary has no module versions ("unknown"), and two versions of a
// library may write the same bytes; what the libraries write is compared
// through their canary digests instead (canary.go).
var informational = map[string]bool{"compression-library": true, "parquet-library": true}

// changes lists the settings that differ between the folder's marker (was)
// and this run's (now). was has passed settingsmarker.Check, so it holds
// every setting its version requires; a setting only one of them records
// (one of settingsmarker.Optional, which a marker of an earlier release
// lacks, or one a later build records) cannot be judged, and is no change;
// nor is an informational one.
func changes(was, now markerSettings) []SettingChange {
	var out []SettingChange
	for _, n := range now {
		w, ok := was.Get(n.Name)
		if !ok || w == n.Value || informational[n.Name] {
			continue
		}
		label := settingLabels[n.Name]
		if label == "" {
			label = n.Name
		}
		out = append(out, SettingChange{Setting: label, Was: w, Now: n.Value})
	}
	return out
}

// ---- reading and writing the marker ------------------------------------------

// folderStore is what judging and stamping an output folder needs: the
// committer's operations, each call bounded and under its Policy (the
// preflight's committer makes one attempt per call).
type folderStore interface {
	ReadObject(ctx context.Context, bucket, key string, max int64) ([]byte, bool, error)
	PutOnce(ctx context.Context, bucket, key string, body []byte, contentType string, max int64) ([]byte, bool, error)
	List(ctx context.Context, bucket, prefix string, fn func([]s3bucket.Object) error) error
}

var _ folderStore = (*s3bucket.Client)(nil)

// readSettings reads the folder's marker: nil, nil when there is none (a
// new folder, or one written by a release that wrote no marker). A marker
// that is there but damaged (header line only, a required setting missing)
// is a *SettingsDamagedError, never "no marker"; done says what this run
// did about it.
func readSettings(ctx context.Context, c folderStore, bucket, prefix, done string) (markerSettings, error) {
	key := ownkeys.SettingsKey(prefix)
	b, found, err := c.ReadObject(ctx, bucket, key, maxSettingsBytes)
	if err != nil {
		return nil, fmt.Errorf("read the settings marker: %w", err)
	}
	if !found {
		return nil, nil
	}
	return decodeMarker(bucket, key, b, done)
}

// decodeMarker decodes a folder's marker and checks that it holds every
// setting its version requires (settingsmarker.Check).
func decodeMarker(bucket, key string, b []byte, done string) (markerSettings, error) {
	ms, err := decodeSettings(b)
	if err != nil {
		return nil, fmt.Errorf("the settings marker s3://%s/%s: %w; use a fresh Prefix, or the s3once build that wrote the folder", bucket, key, err)
	}
	if err := settingsmarker.Check(ms); err != nil {
		e := &SettingsDamagedError{Bucket: bucket, Key: key, Done: done}
		if d := (*settingsmarker.DamagedError)(nil); errors.As(err, &d) {
			e.Missing, e.Empty, e.Invalid = d.Missing, d.Empty, d.Invalid
		}
		return nil, e
	}
	return ms, nil
}

// folderState is what judgeFolder found.
type folderState int

const (
	// folderNew holds no marker and no s3once file: this run's marker is
	// to be written before its first commit.
	folderNew folderState = iota
	// folderMarked holds a marker of this run's settings.
	folderMarked
	// folderLegacy holds s3once files but no marker: an earlier release
	// wrote it (output version 1), with settings nothing records. It is
	// never stamped with a marker, since its files may have other settings.
	folderLegacy
)

// legacyVersion is the output version of a folder that holds s3once files
// but no settings marker.
const legacyVersion = "1"

// judgeFolder compares this run's settings with the folder's marker, or,
// where there is none, tells a new folder from one an earlier release
// wrote (a listing, stopped at the first s3once file). A marker of other
// settings, or a folder of another output version, is a
// SettingsChangedError; done says what this run did about it.
func judgeFolder(ctx context.Context, c folderStore, bucket, prefix string, now markerSettings, done string) (folderState, error) {
	was, err := readSettings(ctx, c, bucket, prefix, done)
	if err != nil {
		return 0, err
	}
	if was != nil {
		if ch := changes(was, now); len(ch) > 0 {
			return 0, &SettingsChangedError{Bucket: bucket, Prefix: prefix, Changes: ch, Done: done}
		}
		return folderMarked, nil
	}
	example, closed, err := anyFile(ctx, c, bucket, prefix)
	if err != nil {
		return 0, err
	}
	if closed != "" {
		// Manifests are written only after the marker, in every release
		// that writes them: the marker was deleted.
		return 0, &SettingsDamagedError{Bucket: bucket, Key: ownkeys.SettingsKey(prefix), Manifest: closed, Done: done}
	}
	if example == "" {
		return folderNew, nil
	}
	if v, _ := now.Get("output-version"); v != legacyVersion {
		return 0, &SettingsChangedError{
			Bucket: bucket, Prefix: prefix, Done: done, Unmarked: example,
			Changes: []SettingChange{{Setting: settingLabels["output-version"], Was: legacyVersion, Now: v}},
		}
	}
	return folderLegacy, nil
}

// errFound stops a listing at its first match.
var errFound = errors.New("found")

// anyFile returns the key of an s3once file in the folder and the key of
// a partition manifest in it, each "" where there is none. It lists until
// it has found both, so a folder without a manifest is listed whole: it
// runs only where the folder has no settings marker.
func anyFile(ctx context.Context, c folderStore, bucket, prefix string) (file, manifest string, err error) {
	err = c.List(ctx, bucket, ownkeys.Folder(prefix), func(page []s3bucket.Object) error {
		for _, o := range page {
			switch {
			case file == "" && ownkeys.IsFileName(prefix, o.Key):
				file = o.Key
			case manifest == "" && ownkeys.IsManifest(prefix, o.Key):
				manifest = o.Key
			}
			if file != "" && manifest != "" {
				return errFound
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", "", fmt.Errorf("list s3://%s/%s for files of an earlier release: %w", bucket, ownkeys.Folder(prefix), err)
	}
	return file, manifest, nil
}

// stampFolder writes this run's marker in a new folder (If-None-Match). A
// marker found in place (another worker's, a concurrent run's) is compared
// with this run's settings.
func stampFolder(ctx context.Context, c folderStore, bucket, prefix string, now markerSettings, done string) error {
	key := ownkeys.SettingsKey(prefix)
	have, written, err := c.PutOnce(ctx, bucket, key, encodeSettings(now), "text/plain; charset=us-ascii", maxSettingsBytes)
	if err != nil {
		return fmt.Errorf("write the settings marker: %w", err)
	}
	if written {
		return nil
	}
	was, err := decodeMarker(bucket, key, have, done)
	if err != nil {
		return err
	}
	if ch := changes(was, now); len(ch) > 0 {
		return &SettingsChangedError{Bucket: bucket, Prefix: prefix, Changes: ch, Done: done}
	}
	return nil
}

// settingsGuard makes sure, once per DoFn instance and before its first
// commit, that the folder's marker holds this run's settings: judged, and
// written where the folder is new. The commit stage (where no run-wide
// barrier did it) and the writer that commits at bundle finalization use it.
type settingsGuard struct {
	mu sync.Mutex
	ok bool
}

// check runs before a commit.
func (g *settingsGuard) check(ctx context.Context, c folderStore, bucket, prefix string, now markerSettings, done string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ok {
		return nil
	}
	state, err := judgeFolder(ctx, c, bucket, prefix, now, done)
	if err == nil && state == folderNew {
		err = stampFolder(ctx, c, bucket, prefix, now, done)
	}
	if err != nil {
		return err
	}
	g.ok = true
	return nil
}

// ---- the barrier's and the commit stage's hooks -------------------------------

// settingsRefusedDone is what a barrier that refuses a run for its
// settings did.
const settingsRefusedDone = "nothing of this run was committed"
