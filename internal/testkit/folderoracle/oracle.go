// Package folderoracle judges an s3once output folder from the outside: it
// lists and reads the folder with a plain S3 client, parses the names, the
// partition manifests and the files with code of its own, and compares
// what it finds with a model of which runs wrote which records.
//
// It shares no code with the sink or with s3once verify, on purpose: it
// imports neither sink nor cmd/s3once, nor the internal packages that
// define the names and encodings (ownkeys, manifest, settingsmarker). Its
// parsers follow the documented shapes:
//
//	<prefix>/<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF><ext>
//	<prefix>/<destination>/_s3once_manifest-<window>        JSON lines: key, size, crc64nvme, records
//	<prefix>/_s3once_settings                               the settings marker
//	<prefix>/_SUCCESS[...]                                  completion markers
//
// A bug in a shared parser would otherwise hide itself from the test that
// should find it.
//
// Read takes a Snapshot of a folder (every object's key, size, ETag and
// bytes, and the folder's open multipart uploads). Judge checks a Snapshot
// against the Model's Candidates: every partition must hold exactly one
// candidate run's records for its destination, in files of that run's
// extension, and, where the folder's output version has manifests, a
// manifest that lists exactly the partition's files with their sizes,
// CRC64NVME and record counts. Committed compares two snapshots'
// committed objects (keys, sizes, ETags): what "a refused run commits
// nothing" means.
//
// For windowed, unbounded input, Stream is the oracle's own model of fixed
// windows and the allowed lateness: from the input's events (records at
// event times, watermark advances) it tells each partition's records and
// the records Beam drops as later than their window's expiry. Expect then
// names candidates per partition rather than per destination, and, where
// the folder's runs write completion markers, Judge checks each window's
// marker against its partitions.
package folderoracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/minio/crc64nvme"
)

// Object is one object of a folder.
type Object struct {
	Size int64
	ETag string
	Body []byte
}

// Snapshot is a folder as listed and read at one moment. Keys are relative
// to the folder (the prefix and its slash cut off).
type Snapshot struct {
	Objects map[string]Object
	// Uploads are the keys (relative) of the open multipart uploads under
	// the folder, one entry per upload.
	Uploads []string
}

// Read lists every object under prefix/ and reads it, and lists the open
// multipart uploads there.
func Read(ctx context.Context, c *s3.Client, bucket, prefix string) (*Snapshot, error) {
	folder := strings.TrimSuffix(prefix, "/") + "/"
	s := &Snapshot{Objects: map[string]Object{}}
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(folder)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s/%s: %w", bucket, folder, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			if err != nil {
				return nil, fmt.Errorf("get %s/%s: %w", bucket, key, err)
			}
			body, err := io.ReadAll(out.Body)
			_ = out.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("read %s/%s: %w", bucket, key, err)
			}
			s.Objects[strings.TrimPrefix(key, folder)] = Object{Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), Body: body}
		}
	}
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(folder)}
	for {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list uploads of %s/%s: %w", bucket, folder, err)
		}
		for _, u := range out.Uploads {
			s.Uploads = append(s.Uploads, strings.TrimPrefix(aws.ToString(u.Key), folder))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	return s, nil
}

// Clone copies a snapshot (objects' bodies are shared: they are never
// changed in place).
func (s *Snapshot) Clone() *Snapshot {
	return &Snapshot{Objects: maps.Clone(s.Objects), Uploads: slices.Clone(s.Uploads)}
}

// ---- names ----------------------------------------------------------------

// File is a parsed output file name.
type File struct {
	Destination, Window string
	Pane                int64
	Shard, Shards       int
	Batch, Batches      int
	Index               int
	Ext                 string
}

var (
	windowRe   = `(?:global|[0-9]{8}T[0-9]{6}(?:\.[0-9]{3})?Z-[0-9]{8}T[0-9]{6}(?:\.[0-9]{3})?Z)`
	fileRe     = regexp.MustCompile(`^(?:(.+)/)?(` + windowRe + `)-pane-(0|[1-9][0-9]*)-shard-([0-9]{5})-of-([0-9]{5})(?:-batch-([0-9]{2})-of-([0-9]{2}))?-file-([0-9]{5})(\.[^/]+)$`)
	manifestRe = regexp.MustCompile(`^(?:(.+)/)?_s3once_manifest-(` + windowRe + `)$`)
)

// ParseFile parses a folder-relative key as an output file's name.
func ParseFile(rel string) (File, bool) {
	m := fileRe.FindStringSubmatch(rel)
	if m == nil || !goodDestination(m[1]) {
		return File{}, false
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	pane, _ := strconv.ParseInt(m[3], 10, 64)
	f := File{Destination: m[1], Window: m[2], Pane: pane, Shard: n(m[4]), Shards: n(m[5]), Index: n(m[8]), Ext: m[9]}
	if m[6] != "" {
		f.Batch, f.Batches = n(m[6]), n(m[7])
	}
	return f, true
}

// ParseManifest parses a folder-relative key as a partition manifest's.
func ParseManifest(rel string) (destination, window string, ok bool) {
	m := manifestRe.FindStringSubmatch(rel)
	if m == nil || !goodDestination(m[1]) {
		return "", "", false
	}
	return m[1], m[2], true
}

func goodDestination(d string) bool {
	if d == "" {
		return true
	}
	for _, seg := range strings.Split(d, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// SettingsMarker is the settings marker's folder-relative key.
const SettingsMarker = "_s3once_settings"

// IsCompletionMarker reports whether a folder-relative key is a completion
// marker (_SUCCESS, _SUCCESS-<window>[-pane-<n>]).
func IsCompletionMarker(rel string) bool {
	return rel == "_SUCCESS" || strings.HasPrefix(rel, "_SUCCESS-")
}

// ---- manifests --------------------------------------------------------------

// Entry is one line of a partition manifest.
type Entry struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	CRC64NVME string `json:"crc64nvme"`
	Records   int64  `json:"records"`
}

// DecodeManifest reads a manifest's JSON lines. Every line must end with a
// newline and decode to an entry.
func DecodeManifest(b []byte) ([]Entry, error) {
	var out []Entry
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("manifest line %d has no newline", len(out)+1)
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("manifest line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
		b = rest
	}
	return out, nil
}

// ---- files --------------------------------------------------------------------

// Records decompresses a file by its extension (.gz, .zst) and splits its
// records: one per line, JSON strings decoded for .jsonl.
func Records(ext string, body []byte) ([]string, error) {
	var r io.Reader = bytes.NewReader(body)
	base := ext
	switch {
	case strings.HasSuffix(ext, ".gz"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r, base = zr, strings.TrimSuffix(ext, ".gz")
	case strings.HasSuffix(ext, ".zst"):
		zr, err := zstd.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		r, base = zr, strings.TrimSuffix(ext, ".zst")
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[len(raw)-1] != '\n' {
		return nil, fmt.Errorf("the last record has no newline (cut off?)")
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, len(raw)+1)
	for sc.Scan() {
		line := sc.Text()
		switch base {
		case ".txt":
			out = append(out, line)
		case ".jsonl":
			var s string
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				return nil, fmt.Errorf("record %d is not a JSON string: %w", len(out)+1, err)
			}
			out = append(out, s)
		default:
			return nil, fmt.Errorf("no reader for extension %q", ext)
		}
	}
	return out, sc.Err()
}

// ---- judging ------------------------------------------------------------------

// Candidate is one run that may own a destination's partition: the records
// it had for the destination, and its files' extension.
type Candidate struct {
	Run     string // names the run in reports
	Ext     string
	Records []string
}

// Expect is what Judge checks a snapshot against.
type Expect struct {
	// Candidates lists, per destination, every run whose partition the
	// folder may hold (each accepted or attempted run with records there).
	Candidates map[string][]Candidate
	// Manifests: the folder's output version writes a manifest for every
	// partition (version 2).
	Manifests bool
	// Settings, when not nil, is the settings marker's bytes as the run
	// that created the folder wrote them; Settings nil and NoSettings
	// false leave the marker unchecked.
	Settings []byte
	// NoSettings: the folder must hold no settings marker.
	NoSettings bool
	// Partitions, when not nil, lists the candidates per partition
	// ("<destination>@<window>") instead of per destination: windowed
	// input, whose windows each hold their own records (Stream).
	Partitions map[string][]Candidate
	// Markers is the completion marker each window must get once its
	// partitions are complete: "success" (empty), "manifest" (listing the
	// window's files), "none" (no marker at all), or "" (unchecked).
	Markers string
}

// candidates lists the runs that may own partition id of destination
// dest.
func (e Expect) candidates(id, dest string) []Candidate {
	if e.Partitions != nil {
		return e.Partitions[id]
	}
	return e.Candidates[dest]
}

// Problem is one thing Judge found wrong.
type Problem struct {
	// Partition is "<destination>@<window>", or "" for the folder.
	Partition string
	// Incomplete: the partition is not finished (files without a
	// manifest, a partial record set a rerun can complete); otherwise it is
	// wrong.
	Incomplete bool
	// Unseen: no reader of the folder alone can tell: the partition,
	// which has no manifest, lacks the last files of its batches, and
	// nothing in the folder shows it (no gap in the files' numbers); or a
	// window whose partitions are complete lacks the completion marker
	// its runs write, a setting the folder does not record.
	Unseen bool
	// Counts: a manifest's record count differs from its file's, which
	// only a reader that counts the records can see.
	Counts bool
	// Window names the window of a completion marker's problem.
	Window string
	Text   string
}

func (p Problem) String() string {
	what := "wrong"
	if p.Incomplete {
		what = "incomplete"
	}
	if p.Partition == "" {
		return what + ": " + p.Text
	}
	return what + ": " + p.Partition + ": " + p.Text
}

// Verdict is Judge's answer.
type Verdict struct {
	Problems []Problem
	// Owner names, per partition, the candidate run whose records it holds.
	Owner map[string]string
	// Files counts the output files, Partitions the partitions.
	Files, Partitions int
}

// Right reports whether no problem was found: the folder is right and
// complete.
func (v Verdict) Right() bool { return len(v.Problems) == 0 }

// RightBut reports whether every problem found is one a reader of the
// folder cannot see without counting records (counts) or at all (Unseen).
func (v Verdict) RightBut(counts bool) bool {
	for _, p := range v.Problems {
		if !p.Unseen && !(counts && p.Counts) {
			return false
		}
	}
	return true
}

// Wrong reports whether a problem other than an unfinished partition was
// found.
func (v Verdict) Wrong() bool {
	for _, p := range v.Problems {
		if !p.Incomplete {
			return true
		}
	}
	return false
}

func (v Verdict) String() string {
	if v.Right() {
		return fmt.Sprintf("right: %d partitions, %d files", v.Partitions, v.Files)
	}
	var b strings.Builder
	for i, p := range v.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

type partition struct {
	dest, window string
	files        []string
	manifest     string
}

// Judge checks every partition of s against e.
func Judge(s *Snapshot, e Expect) Verdict {
	v := Verdict{Owner: map[string]string{}}
	parts := map[string]*partition{}
	get := func(dest, window string) *partition {
		id := dest + "@" + window
		if parts[id] == nil {
			parts[id] = &partition{dest: dest, window: window}
		}
		return parts[id]
	}
	for _, rel := range slices.Sorted(maps.Keys(s.Objects)) {
		if f, ok := ParseFile(rel); ok {
			p := get(f.Destination, f.Window)
			p.files = append(p.files, rel)
			v.Files++
			continue
		}
		if d, w, ok := ParseManifest(rel); ok {
			get(d, w).manifest = rel
		}
	}
	v.Partitions = len(parts)
	bad := func(part string, incomplete bool, format string, args ...any) {
		v.Problems = append(v.Problems, Problem{Partition: part, Incomplete: incomplete, Text: fmt.Sprintf(format, args...)})
	}
	marker, hasMarker := s.Objects[SettingsMarker]
	switch {
	case e.NoSettings && hasMarker:
		bad("", false, "a settings marker where the folder should have none")
	case e.Settings != nil && !hasMarker:
		bad("", false, "the settings marker is missing")
		// Without a manifest beside it, a folder whose marker was deleted
		// is an earlier release's folder to every reader of it.
		unseen := true
		for rel := range s.Objects {
			if _, _, ok := ParseManifest(rel); ok {
				unseen = false
				break
			}
		}
		v.Problems[len(v.Problems)-1].Unseen = unseen
	case e.Settings != nil && !bytes.Equal(marker.Body, e.Settings):
		bad("", false, "the settings marker differs from the one the folder's first run wrote (%d bytes, want %d)", len(marker.Body), len(e.Settings))
	}
	if len(s.Objects) == 0 {
		bad("", true, "no output in the folder")
	}
	for _, u := range s.Uploads {
		bad("", true, "open upload of %s (a run not finished, or one left over)", u)
	}
	for _, id := range slices.Sorted(maps.Keys(parts)) {
		p := parts[id]
		judgePartition(s, e, id, p, &v, bad)
	}
	if e.Markers != "" {
		judgeMarkers(s, e, parts, &v)
	}
	return v
}

func judgePartition(s *Snapshot, e Expect, id string, p *partition, v *Verdict, bad func(string, bool, string, ...any)) {
	exts := map[string]bool{}
	var records []string
	counts := map[string]int64{}
	for _, rel := range p.files {
		f, _ := ParseFile(rel)
		exts[f.Ext] = true
		recs, err := Records(f.Ext, s.Objects[rel].Body)
		if err != nil {
			bad(id, false, "%s: %v", rel, err)
			return
		}
		counts[rel] = int64(len(recs))
		records = append(records, recs...)
	}
	if len(exts) > 1 {
		bad(id, false, "files of %d extensions %v", len(exts), slices.Sorted(maps.Keys(exts)))
		return
	}
	var ext string
	for x := range exts {
		ext = x
	}
	if len(p.files) == 0 {
		bad(id, false, "a manifest %s without files", p.manifest)
		return
	}
	slices.Sort(records)
	owner := ""
	partial := false
	cands := e.candidates(id, p.dest)
	for _, c := range cands {
		if c.Ext != ext {
			continue
		}
		want := slices.Clone(c.Records)
		slices.Sort(want)
		if slices.Equal(records, want) {
			owner = c.Run
			break
		}
		if subMultiset(records, want) {
			partial = true
		}
	}
	if owner == "" {
		if partial && p.manifest == "" {
			bad(id, true, "%d records in %d %s files: part of a run's records, no manifest (a run not finished)", len(records), len(p.files), ext)
			if !gapped(p.files) {
				v.Problems[len(v.Problems)-1].Unseen = true
			}
		} else {
			bad(id, false, "%d records in %d %s files: no run wrote exactly these (%s)", len(records), len(p.files), ext, describeCandidates(cands, records))
		}
		return
	}
	v.Owner[id] = owner
	if p.manifest == "" {
		if e.Manifests {
			bad(id, true, "no manifest (the run that owns it, %s, has not finished it)", owner)
		}
		return
	}
	entries, err := DecodeManifest(s.Objects[p.manifest].Body)
	if err != nil {
		bad(id, false, "manifest %s: %v", p.manifest, err)
		return
	}
	listed := map[string]Entry{}
	for _, en := range entries {
		listed[en.Key] = en
	}
	if len(listed) != len(entries) {
		bad(id, false, "manifest %s lists a key twice", p.manifest)
	}
	for _, rel := range p.files {
		o := s.Objects[rel]
		en, found := takeListed(listed, rel)
		switch {
		case !found:
			bad(id, false, "manifest %s does not list %s", p.manifest, rel)
		case en.Size != o.Size:
			bad(id, false, "manifest %s gives %s %d bytes; it has %d", p.manifest, rel, en.Size, o.Size)
		case en.Records != counts[rel]:
			bad(id, false, "manifest %s gives %s %d records; it holds %d", p.manifest, rel, en.Records, counts[rel])
			v.Problems[len(v.Problems)-1].Counts = true
		case en.CRC64NVME != fmt.Sprintf("%016x", crc64nvme.Checksum(o.Body)):
			bad(id, false, "manifest %s gives %s CRC64NVME %s; its bytes have %016x", p.manifest, rel, en.CRC64NVME, crc64nvme.Checksum(o.Body))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(listed)) {
		bad(id, false, "manifest %s lists %s, which is not there", p.manifest, k)
	}
}

// takeListed takes from listed (by full key) the entry of the
// folder-relative key rel.
func takeListed[T any](listed map[string]T, rel string) (T, bool) {
	for k, x := range listed {
		if strings.HasSuffix(k, "/"+rel) || k == rel {
			delete(listed, k)
			return x, true
		}
	}
	var zero T
	return zero, false
}

// gapped reports whether the files' numbers leave a gap within a batch
// (one pane, shard and sub-batch), whose files are numbered from 0.
func gapped(files []string) bool {
	type batch struct {
		pane                     int64
		shard, shards, sub, subs int
		ext                      string
	}
	seen := map[batch][]int{}
	for _, rel := range files {
		f, ok := ParseFile(rel)
		if !ok {
			continue
		}
		b := batch{f.Pane, f.Shard, f.Shards, f.Batch, f.Batches, f.Ext}
		seen[b] = append(seen[b], f.Index)
	}
	for _, ns := range seen {
		slices.Sort(ns)
		for i, n := range ns {
			if n != i {
				return true
			}
		}
	}
	return false
}

// subMultiset reports whether sorted a is contained in b (any order).
func subMultiset(a, b []string) bool {
	left := map[string]int{}
	for _, r := range b {
		left[r]++
	}
	for _, r := range a {
		if left[r] == 0 {
			return false
		}
		left[r]--
	}
	return true
}

func describeCandidates(cs []Candidate, got []string) string {
	if len(cs) == 0 {
		return "no run wrote this destination"
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s: %d %s", c.Run, len(c.Records), c.Ext))
	}
	return "candidates " + strings.Join(parts, ", ")
}

// Committed lists the differences between two snapshots' committed
// objects (keys, sizes, ETags); uploads are not compared.
func Committed(before, after *Snapshot) []string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(before.Objects)) {
		b := before.Objects[k]
		a, ok := after.Objects[k]
		switch {
		case !ok:
			diffs = append(diffs, "removed "+k)
		case a.Size != b.Size || a.ETag != b.ETag:
			diffs = append(diffs, fmt.Sprintf("changed %s (%d bytes %s -> %d bytes %s)", k, b.Size, b.ETag, a.Size, a.ETag))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after.Objects)) {
		if _, ok := before.Objects[k]; !ok {
			diffs = append(diffs, "added "+k)
		}
	}
	return diffs
}
