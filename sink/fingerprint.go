package sink

// The settings marker: one object per output folder,
// <Prefix>/_s3once_settings, that records the settings a file's bytes and
// names depend on. A rerun with other settings is refused before it
// commits anything (ErrSettingsChanged), by the preflight and by the sink.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
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
	// Was is the value recorded in the folder; Now this run's.
	Was, Now string
}

// SettingsChangedError is the error of a run, or of Preflight, that finds
// the output folder written with other byte-affecting settings. It wraps
// ErrSettingsChanged.
type SettingsChangedError struct {
	Bucket, Prefix string
	// Changes lists every setting that differs, in the marker's order.
	Changes []SettingChange
	// Done says what this run did about it ("nothing of this run was
	// committed ..."); empty from Preflight, which writes nothing.
	Done string
}

func (e *SettingsChangedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3once sink: s3://%s/%s holds files written with other byte-affecting settings (recorded in s3://%s/%s):",
		e.Bucket, ownkeys.Folder(e.Prefix), e.Bucket, ownkeys.SettingsKey(e.Prefix))
	for i, c := range e.Changes {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s %s -> %s", c.Setting, shown(c.Was), shown(c.Now))
	}
	b.WriteString("; ")
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	b.WriteString("when the settings change, write to a fresh Prefix (or delete the folder's files and its " + ownkeys.SettingsName + " to replace them): ")
	b.WriteString(ErrSettingsChanged.Error())
	return b.String()
}

func (e *SettingsChangedError) Unwrap() error { return ErrSettingsChanged }

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
	"checkpoint-sync-bytes":     "CheckpointBytes (compressed members end every min(CheckpointBytes, 1 MiB))",
	"compression":               "Compression",
	"compression-library":       "the compression library",
	"file-names":                "the file names",
	"format":                    "Format",
	"max-batch-bytes":           "MaxBatchBytes",
	"max-file-bytes":            "MaxFileBytes",
	"max-file-records":          "MaxFileRecords",
	"output-version":            "s3once's output format version",
	"parquet-compression":       "Parquet.Compression",
	"parquet-library":           "the Parquet library",
	"parquet-row-group-bytes":   "Parquet.RowGroupBytes",
	"parquet-row-group-records": "Parquet.RowGroupRecords",
	"shards":                    "Shards",
}

// setting is one name and value of a marker; fingerprint a marker's
// content (internal/settingsmarker holds its encoding).
type (
	setting     = settingsmarker.Setting
	fingerprint = settingsmarker.Settings
)

func encodeFingerprint(fp fingerprint) []byte { return settingsmarker.Encode(fp) }

func decodeFingerprint(b []byte) (fingerprint, error) { return settingsmarker.Decode(b) }

// errSettingsMarker is wrapped by decodeFingerprint's errors.
var errSettingsMarker = settingsmarker.ErrInvalid

// maxSettingsBytes bounds a marker (and what is read of one).
const maxSettingsBytes = settingsmarker.MaxBytes

// fingerprint is what the settings marker records for s: every setting the
// bytes or names of a file depend on, besides the records themselves, the
// element type and the Destination function (user code, which a rerun's
// barrier or commit judges by the bytes). A setting that has no effect under
// the others is recorded as "" (the sync spacing without compression, the
// Parquet settings of other formats), so that changing it alone is no
// change.
func (s settings) fingerprint() fingerprint {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	ext := ""
	if f, err := lookupFormat(s.Format); err == nil {
		ext += f.Extension()
	}
	if c, err := lookupCodec(s.Compression); err == nil {
		ext += c.Extension()
	}
	sync, codecLib := "", ""
	if s.Compression != "none" {
		sync = itoa(s.syncBytes())
		codecLib = codecLibrary(s.Compression)
	}
	var pqComp, pqLib, pqBytes, pqRecords string
	if s.Parquet != nil {
		pqComp, pqBytes, pqRecords = s.Parquet.Compression, itoa(s.Parquet.RowGroupBytes), itoa(s.Parquet.RowGroupRecords)
		pqLib = moduleOf("github.com/parquet-go/parquet-go")
		if pqComp != "none" {
			pqLib += ", " + moduleOf("github.com/klauspost/compress/zstd")
		}
	}
	return fingerprint{
		{Name: "checkpoint-sync-bytes", Value: sync},
		{Name: "compression", Value: s.Compression},
		{Name: "compression-library", Value: codecLib},
		{Name: "file-names", Value: fileNames + ext},
		{Name: "format", Value: s.Format},
		{Name: "max-batch-bytes", Value: itoa(s.MaxBatchBytes)},
		{Name: "max-file-bytes", Value: itoa(s.MaxFileBytes)},
		{Name: "max-file-records", Value: itoa(s.MaxFileRecords)},
		{Name: "output-version", Value: strconv.Itoa(s.OutputVersion)},
		{Name: "parquet-compression", Value: pqComp},
		{Name: "parquet-library", Value: pqLib},
		{Name: "parquet-row-group-bytes", Value: pqBytes},
		{Name: "parquet-row-group-records", Value: pqRecords},
		{Name: "shards", Value: itoa(int64(s.Shards))},
	}
}

// codecLibrary names the module, with its version, that implements the
// codec registered under name: klauspost/compress for the built-in ones,
// the codec type's module for a program's own.
func codecLibrary(name string) string {
	switch name {
	case "gzip", "zstd":
		return moduleOf("github.com/klauspost/compress/" + name)
	}
	c, err := lookupCodec(name)
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

// changes lists the settings that differ between the folder's marker (was)
// and this run's (now). A setting only one of them records (a build of
// s3once that records more, or fewer) cannot be judged, and is no change.
func changes(was, now fingerprint) []SettingChange {
	var out []SettingChange
	for _, n := range now {
		w, ok := was.Get(n.Name)
		if !ok || w == n.Value {
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

// settingsAPI is what reading and writing the marker needs.
type settingsAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// readSettings reads the folder's marker: nil, nil when there is none (a
// new folder, or one written by a release that wrote no marker).
func readSettings(ctx context.Context, c settingsAPI, bucket, prefix string) (fingerprint, error) {
	key := ownkeys.SettingsKey(prefix)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		if s3call.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the settings marker s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxSettingsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the settings marker s3://%s/%s: %w", bucket, key, err)
	}
	fp, err := decodeFingerprint(b)
	if err != nil {
		return nil, fmt.Errorf("the settings marker s3://%s/%s: %w; use a fresh Prefix, or the s3once build that wrote the folder", bucket, key, err)
	}
	return fp, nil
}

// compareSettings checks this run's settings against the folder's marker,
// if it has one. It reports whether the folder has a marker.
func compareSettings(ctx context.Context, c settingsAPI, bucket, prefix string, now fingerprint, done string) (bool, error) {
	was, err := readSettings(ctx, c, bucket, prefix)
	if err != nil || was == nil {
		return false, err
	}
	if ch := changes(was, now); len(ch) > 0 {
		return true, &SettingsChangedError{Bucket: bucket, Prefix: prefix, Changes: ch, Done: done}
	}
	return true, nil
}

// writeSettings writes the folder's marker where there is none
// (If-None-Match: *). A marker found in place (another worker's, a rerun's)
// is compared with this run's settings.
func writeSettings(ctx context.Context, c settingsAPI, bucket, prefix string, now fingerprint, done string) error {
	key := ownkeys.SettingsKey(prefix)
	body := encodeFingerprint(now)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*"),
		ContentType: aws.String("text/plain; charset=us-ascii"),
	})
	if err == nil {
		return nil
	}
	if !s3call.IsPreconditionFailed(err) && !s3call.IsConflict(err) {
		return fmt.Errorf("write the settings marker s3://%s/%s: %w", bucket, key, err)
	}
	found, err := compareSettings(ctx, c, bucket, prefix, now, done)
	if err == nil && !found {
		err = fmt.Errorf("the settings marker s3://%s/%s was refused as present and then not found; retry", bucket, key)
	}
	return err
}

// settingsGuard is the check a commit stage makes before its first commit,
// and the write after it, once per DoFn instance.
type settingsGuard struct {
	mu      sync.Mutex
	checked bool // the folder's marker holds this run's settings, or it has none
	written bool // the marker is in place
}

// check runs before a commit: it compares the folder's marker, once.
func (g *settingsGuard) check(ctx context.Context, c settingsAPI, bucket, prefix string, now fingerprint) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checked {
		return nil
	}
	found, err := compareSettings(ctx, c, bucket, prefix, now, "this run committed nothing; its uploads are left for the sweep")
	if err != nil {
		return err
	}
	g.checked, g.written = true, found
	return nil
}

// committed runs after a commit: it writes the marker where there was none.
// Writing it after the first commit, not before, leaves a folder of an
// earlier release without a marker when this run's first commit finds its
// key taken.
func (g *settingsGuard) committed(ctx context.Context, c settingsAPI, bucket, prefix string, now fingerprint) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.written {
		return nil
	}
	if err := writeSettings(ctx, c, bucket, prefix, now, "this run committed files already"); err != nil {
		return err
	}
	g.written = true
	return nil
}

// ---- the barrier's and the commit stage's hooks -------------------------------

// decodeSettings reads the marker the DoFn carries (fingerprint.go).
func (f *barrierFn) decodeSettings() (err error) {
	if len(f.Settings) > 0 {
		if f.fp, err = decodeFingerprint(f.Settings); err != nil {
			return fmt.Errorf("s3once sink: barrier: the run's settings marker: %w", err)
		}
	}
	return nil
}

// settingsRefusedDone is what a barrier that refuses a run for its
// settings did.
const settingsRefusedDone = "nothing of this run was committed and its uploads were aborted, so the folder is as the earlier run left it"

// refuseSettings ends a run whose settings marker check failed: when the
// folder holds other settings, every upload of the run is discarded, as
// for a taken key; any other failure (reading the marker) fails the bundle
// for the runner to retry, with nothing committed.
func (f *barrierFn) refuseSettings(ctx context.Context, all []*barrierFile, err error) error {
	if !errors.Is(err, ErrSettingsChanged) {
		return fmt.Errorf("s3once sink: barrier: %w", err)
	}
	if cleanup := f.discard(ctx, all); cleanup != nil {
		return fmt.Errorf("%w (and removing this run's uploads failed, the sweep will remove them: %w)", err, cleanup)
	}
	return err
}

// checkSettings is the preflight's look at the output folder's settings
// marker: a marker of other settings is a problem that names each of them.
// It is skipped when the Config did not validate (the settings are then
// unknown: Format is empty only then).
func (p *prober) checkSettings(ctx context.Context) {
	if p.s.Format == "" {
		p.pe.Unchecked = append(p.pe.Unchecked, "the output folder's settings marker (the configuration is not valid)")
		return
	}
	key := ownkeys.SettingsKey(p.s.Prefix)
	now := p.s.fingerprint()
	p.check(ctx, "compare the output folder's settings marker", p.s.Bucket, key, "s3:GetObject", func(ctx context.Context) error {
		_, err := compareSettings(ctx, p.api, p.s.Bucket, p.s.Prefix, now, "")
		return err
	})
}
