package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/minio/crc64nvme"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/settingsmarker"
	"github.com/s3once/s3once/internal/tablemarker"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

const (
	hour = "20240601T100000Z-20240601T110000Z"
	ext  = ".jsonl.gz"
)

// outFolder builds an output folder by hand, as the sink would leave it.
type outFolder struct {
	t      *testing.T
	client *s3.Client
	bucket string
	prefix string
}

func (f *outFolder) put(key string, body []byte) {
	f.t.Helper()
	_, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &f.bucket, Key: aws.String(key), Body: bytes.NewReader(body)})
	if err != nil {
		f.t.Fatalf("put %s: %v", key, err)
	}
}

// name is the key of a file of the folder.
func (f *outFolder) name(dest, window string, shard, shards, file int, ext string) string {
	return ownkeys.FileKey(f.prefix, dest, ownkeys.FileName{Window: window, Shard: shard, Shards: shards, File: file, Ext: ext})
}

// body is a file's bytes, distinct for each key.
func body(key string) []byte { return []byte(strings.Repeat(key+"\n", 3)) }

// file puts a file and returns its manifest entry.
func (f *outFolder) file(key string) manifest.Entry {
	f.t.Helper()
	b := body(key)
	f.put(key, b)
	return manifest.Entry{Key: key, Size: int64(len(b)), CRC64NVME: crc64nvme.Checksum(b), Records: 3}
}

func (f *outFolder) manifest(dest, window string, entries ...manifest.Entry) {
	f.t.Helper()
	b, err := manifest.Encode(entries)
	if err != nil {
		f.t.Fatal(err)
	}
	f.put(ownkeys.ManifestKey(f.prefix, dest, window), b)
}

// settings puts a settings marker of the output version, extension and
// Shards (a count, or "auto:N" for automatic sharding), the other settings
// as the sink records them for JSON lines and gzip.
func (f *outFolder) settings(version, ext string, shards any) {
	f.t.Helper()
	f.put(ownkeys.SettingsKey(f.prefix), settingsmarker.Encode(markerSettings(version, ext, shards)))
}

// markerSettings is what settings puts.
func markerSettings(version, ext string, shards any) settingsmarker.Settings {
	return settingsmarker.Settings{
		{Name: "checkpoint-sync-bytes", Value: "1048576"},
		{Name: "compression", Value: "gzip"},
		{Name: "compression-library", Value: "github.com/klauspost/compress v1.19.2"},
		{Name: "file-names", Value: "<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF>" + ext},
		{Name: "format", Value: "jsonl"},
		{Name: "max-batch-bytes", Value: "67108864"},
		{Name: "max-file-bytes", Value: "67108864"},
		{Name: "max-file-records", Value: "0"},
		{Name: "output-version", Value: version},
		{Name: "parquet-compression", Value: ""},
		{Name: "parquet-library", Value: ""},
		{Name: "parquet-row-group-bytes", Value: ""},
		{Name: "parquet-row-group-records", Value: ""},
		{Name: "shards", Value: fmt.Sprint(shards)},
	}
}

// written puts a file as the sink writes one of format jsonl: records
// (JSON strings, one a line) sorted, gzip-compressed where the key ends in
// ".gz"; it returns its manifest entry.
func (f *outFolder) written(key string, records ...string) manifest.Entry {
	f.t.Helper()
	records = slices.Sorted(slices.Values(records))
	var b bytes.Buffer
	for _, r := range records {
		b.WriteString(strconv.Quote(r) + "\n")
	}
	data := b.Bytes()
	if strings.HasSuffix(key, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		if _, err := zw.Write(data); err != nil {
			f.t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			f.t.Fatal(err)
		}
		data = z.Bytes()
	}
	f.put(key, data)
	return manifest.Entry{Key: key, Size: int64(len(data)), CRC64NVME: crc64nvme.Checksum(data), Records: int64(len(records))}
}

// get reads an object whole.
func (f *outFolder) get(key string) []byte {
	f.t.Helper()
	out, err := f.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &f.bucket, Key: &key})
	if err != nil {
		f.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *outFolder) delete(key string) {
	f.t.Helper()
	if _, err := f.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &f.bucket, Key: &key}); err != nil {
		f.t.Fatal(err)
	}
}

// readable builds a version-2 folder of real jsonl.gz files that verifies
// with --read too: partition "a" (two files of shard 0, one of shard 1,
// 5 records) and "b" (3 records), each with its manifest, and, with
// marker, the global window's completion marker (an empty _SUCCESS).
func (f *outFolder) readable(marker bool) (a []manifest.Entry) {
	f.t.Helper()
	f.settings("2", ext, 2)
	a = []manifest.Entry{
		f.written(f.name("a", "global", 0, 2, 0, ext), "r1", "r2"),
		f.written(f.name("a", "global", 0, 2, 1, ext), "r3", "r4"),
		f.written(f.name("a", "global", 1, 2, 0, ext), "r5"),
	}
	f.manifest("a", "global", a...)
	f.manifest("b", "global", f.written(f.name("b", "global", 1, 2, 0, ext), "r6", "r7", "r8"))
	if marker {
		f.put(ownkeys.MarkerKey(f.prefix, "global", 0), nil)
	}
	return a
}

// successMarker puts a completion marker listing entries as the sink's
// "manifest" mode does.
func (f *outFolder) successMarker(key string, entries ...manifest.Entry) {
	f.t.Helper()
	var b bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(map[string]any{"bucket": f.bucket, "key": e.Key, "bytes": e.Size, "records": e.Records})
		if err != nil {
			f.t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	f.put(key, b.Bytes())
}

// consistent builds a version-2 folder that verifies: two destinations of
// the global window and one of an hour window, each with its manifest, a
// settings marker, completion markers (one listing files, one empty), and
// a key of another tool.
func (f *outFolder) consistent() []manifest.Entry {
	f.settings("2", ext, 2)
	a := []manifest.Entry{f.file(f.name("day=1", "global", 0, 2, 0, ext)), f.file(f.name("day=1", "global", 0, 2, 1, ext)), f.file(f.name("day=1", "global", 1, 2, 0, ext))}
	f.manifest("day=1", "global", a...)
	b := []manifest.Entry{f.file(f.name("day=2", "global", 1, 2, 0, ext))}
	f.manifest("day=2", "global", b...)
	c := []manifest.Entry{f.file(f.name("", hour, 0, 2, 0, ext))}
	f.manifest("", hour, c...)
	f.successMarker(ownkeys.MarkerKey(f.prefix, "global", 0), append(a, b...)...)
	f.put(ownkeys.MarkerKey(f.prefix, hour, 0), nil)
	f.put(ownkeys.Folder(f.prefix)+"README.txt", []byte("not s3once's"))
	return slices.Concat(a, b, c)
}

// TestVerify runs s3once verify on folders built by hand on versitygw: it
// passes on consistent folders, says when it fell back to a listing, and
// names each kind of inconsistency with exit code 1.
func TestVerify(t *testing.T) { testVerify(t, s3test.Start(t, s3test.Options{})) }

// TestVerifyOnMinIO runs the same on MinIO, a second, independent server
// (whose listings of uploads match a Prefix as a whole key).
func TestVerifyOnMinIO(t *testing.T) {
	testVerify(t, s3test.Start(t, s3test.Options{Kind: s3test.MinIO}))
}

func testVerify(t *testing.T, srv *s3test.Server) {
	client := srv.Client(s3test.ClientOptions{})
	bucket := srv.Bucket(t)
	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	folder := func(t *testing.T) *outFolder {
		return &outFolder{t: t, client: client, bucket: bucket, prefix: strings.ReplaceAll(t.Name(), "/", "-")}
	}
	verify := func(t *testing.T, f *outFolder, wantCode int, extra ...string) verifyReport {
		t.Helper()
		args := append([]string{"verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style", "--json"}, extra...)
		r := runCmd(t, "", env, args...)
		var rep verifyReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("exit %d, the report is not JSON: %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
		}
		if r.code != wantCode || rep.ExitCode != wantCode {
			t.Fatalf("exit %d (report %d), want %d\nstdout: %s\nstderr: %s", r.code, rep.ExitCode, wantCode, r.stdout, r.stderr)
		}
		return rep
	}
	// kinds is every problem's kind and key, sorted.
	kinds := func(rep verifyReport) []string {
		var out []string
		for _, p := range rep.Problems {
			out = append(out, p.Kind+" "+p.Key)
		}
		slices.Sort(out)
		return out
	}
	wantProblems := func(t *testing.T, rep verifyReport, want ...string) {
		t.Helper()
		slices.Sort(want)
		if got := kinds(rep); !slices.Equal(got, want) {
			t.Fatalf("problems\n  %s\nwant\n  %s\nreport: %+v", strings.Join(got, "\n  "), strings.Join(want, "\n  "), rep)
		}
	}
	partition := func(t *testing.T, rep verifyReport, dest, window string) *partitionReport {
		t.Helper()
		for _, p := range rep.Partitions {
			if p.Destination == dest && p.Window == window {
				return p
			}
		}
		t.Fatalf("no partition %q %q in %+v", dest, window, rep.Partitions)
		return nil
	}

	// A table run's folder (<table location>/data/<run id>) with
	// --table-run: committed files without the table stage's commit marker
	// are named, by run id; with a marker that names the run and its
	// files, the folder verifies.
	t.Run("TableRun", func(t *testing.T) {
		f := folder(t)
		f.prefix += "/data/run-7"
		files := f.consistent()
		rep := verify(t, f, exitProblems, "--table-run")
		wantProblems(t, rep, kindNotInTable+" "+tablemarker.Key(f.prefix, "global"), kindNotInTable+" "+tablemarker.Key(f.prefix, hour))
		for _, p := range rep.Problems {
			if !strings.Contains(p.Message, `run "run-7"`) || !strings.Contains(p.Message, "never reached the table") {
				t.Errorf("problem %+v does not name the run and what happened", p)
			}
		}
		verify(t, f, exitOK) // without --table-run, the folder is an ordinary one
		var global int
		for _, e := range files {
			if !strings.Contains(e.Key, hour) {
				global++
			}
		}
		marker := func(window string, n int) {
			f.put(tablemarker.Key(f.prefix, window), tablemarker.Encode(tablemarker.Marker{
				RunID: "run-7", Window: window, Table: "lake.events", SnapshotID: 42, Files: n, FilesSHA256: strings.Repeat("ab", 32),
			}))
		}
		marker("global", global)
		marker(hour, len(files)-global+1)
		rep = verify(t, f, exitProblems, "--table-run")
		wantProblems(t, rep, kindNotInTable+" "+tablemarker.Key(f.prefix, hour))
		marker(hour, len(files)-global)
		rep = verify(t, f, exitOK, "--table-run")
		if len(rep.TableRun) != 2 || rep.TableRun[0].SnapshotID != 42 {
			t.Errorf("table run report %+v, want both windows in snapshot 42", rep.TableRun)
		}
	})

	t.Run("ConsistentV2", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		rep := verify(t, f, exitOK)
		wantProblems(t, rep)
		if rep.Problems == nil || rep.Unverified == nil || rep.Uploads == nil || rep.NamedLikeS3once == nil {
			t.Fatalf("empty lists are not [] in JSON: %+v", rep)
		}
		if rep.Outcome != outcomeVerified || len(rep.Unverified) != 0 || len(rep.Partitions) != 3 || rep.OtherKeys != 1 ||
			!rep.Settings.Found || rep.Settings.OutputVersion != "2" || rep.Settings.Extension != ext || rep.Settings.Shards != 2 {
			t.Fatalf("report %+v", rep)
		}
		p := partition(t, rep, "day=1", "global")
		if p.CheckedBy != byManifest || p.Files != 3 || p.Entries != 3 || p.Records != 9 || p.RecordsFrom != recordsFromManifest || p.Mixed || p.Manifest != ownkeys.ManifestKey(f.prefix, "day=1", "global") {
			t.Fatalf("partition day=1: %+v", p)
		}
		if p := partition(t, rep, "", hour); p.CheckedBy != byManifest || p.Files != 1 {
			t.Fatalf("partition of the hour: %+v", p)
		}
		if len(rep.CompletionMarkers) != 2 || rep.CompletionMarkers[0].Files+rep.CompletionMarkers[1].Files != 4 {
			t.Fatalf("completion markers %+v", rep.CompletionMarkers)
		}
		var total int64
		for _, p := range rep.Partitions {
			total += p.Bytes
		}
		var want int64
		for _, e := range files {
			want += e.Size
		}
		if total != want {
			t.Fatalf("partitions hold %d bytes, want %d", total, want)
		}
		// The human report says so too.
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		if r.code != exitOK || !strings.Contains(r.stdout, "VERIFIED") || !strings.Contains(r.stdout, "partition day=1 global: 3 files") {
			t.Fatalf("human report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})

	// A correct output-version-1 folder (no manifests): a listing cannot
	// prove its files' bytes, so it is unverified by default (exit 3); with
	// --read every file is read and decoded, its records counted: exit 0.
	// A file missing between others of its batch (the writer numbers a
	// batch's files from 0 without a gap) is found without a manifest, in
	// every mode; the batch's last file gone leaves no trace.
	t.Run("V1NumberMissing", func(t *testing.T) {
		f := folder(t)
		f.written(f.name("day=1", "global", 0, 2, 0, ".jsonl"), "a", "b")
		gone := f.name("day=1", "global", 0, 2, 1, ".jsonl")
		f.written(f.name("day=1", "global", 0, 2, 2, ".jsonl"), "e")
		f.written(f.name("day=1", "global", 1, 2, 0, ".jsonl"), "f")
		for _, mode := range [][]string{nil, {"--read"}} {
			wantProblems(t, verify(t, f, exitProblems, mode...), kindMissing+" "+gone)
		}
	})

	t.Run("V1FallsBack", func(t *testing.T) {
		f := folder(t)
		f.written(f.name("day=1", "global", 0, 4, 0, ".jsonl"), "a", "b")
		f.written(f.name("day=1", "global", 3, 4, 0, ".jsonl"), "c")
		f.written(f.name("day=2", "global", 1, 4, 0, ".jsonl"), "d", "e", "f")
		rep := verify(t, f, exitUnverified)
		wantProblems(t, rep)
		if rep.Settings.Found || len(rep.Partitions) != 2 || len(rep.Unverified) != 2 || rep.RecordsFrom != "" {
			t.Fatalf("report %+v", rep)
		}
		for _, u := range rep.Unverified {
			if !strings.Contains(u.Error, "--read") {
				t.Fatalf("unverified %+v does not say how to prove it", u)
			}
		}
		for _, p := range rep.Partitions {
			if p.CheckedBy != byListing || !strings.Contains(p.Note, "output-version-1") || p.Manifest != "" || p.RecordsFrom != "" {
				t.Fatalf("partition %+v does not say it fell back", p)
			}
		}
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		if r.code != exitUnverified || !strings.Contains(r.stdout, "by listing") || !strings.Contains(r.stdout, "verify --read reads them") {
			t.Fatalf("human report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		rep = verify(t, f, exitOK, "--read")
		wantProblems(t, rep)
		if !rep.Read || rep.RecordsFrom != recordsFromFiles {
			t.Fatalf("report %+v", rep)
		}
		if p := partition(t, rep, "day=1", "global"); p.CheckedBy != byReading || p.Records != 3 || p.RecordsFrom != recordsFromFiles {
			t.Fatalf("partition read: %+v", p)
		}
		// A file cut short does not decode.
		cut := f.name("day=2", "global", 1, 4, 0, ".jsonl")
		f.put(cut, []byte(`"d"`+"\n"+`"e`))
		wantProblems(t, verify(t, f, exitProblems, "--read"), kindUnreadable+" "+cut)
	})

	// A partition without a manifest in an output-version-2 folder: its
	// window's completion marker, written after every manifest of the
	// window, exists: manifest-missing; it does not: the run may not have
	// finished (exit 3), with --read too.
	t.Run("V2WithoutManifestYet", func(t *testing.T) {
		f := folder(t)
		f.readable(false)
		const later = "20240601T110000Z-20240601T120000Z"
		f.written(f.name("day=3", later, 1, 2, 0, ext), "x")
		for _, mode := range [][]string{nil, {"--read"}} {
			rep := verify(t, f, exitUnverified, mode...)
			wantProblems(t, rep)
			if p := partition(t, rep, "day=3", later); !strings.Contains(p.Note, "may not have finished") {
				t.Fatalf("partition without a manifest: %+v", p)
			}
			if len(rep.Unverified) == 0 || rep.Unverified[0].Key != ownkeys.PartitionFilePrefix(f.prefix, "day=3", later) || !strings.Contains(rep.Unverified[0].Error, "may not have finished") {
				t.Fatalf("unverified %+v", rep.Unverified)
			}
		}
		f.written(f.name("day=3", hour, 1, 2, 0, ext), "y")
		f.put(ownkeys.MarkerKey(f.prefix, hour, 0), nil) // the hour's completion marker
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindManifestMissing+" "+ownkeys.ManifestKey(f.prefix, "day=3", hour))
		if p := partition(t, rep, "day=3", hour); p.Problems != 1 || !strings.Contains(p.Note, ownkeys.MarkerKey(f.prefix, hour, 0)) {
			t.Fatalf("partition without its manifest: %+v", p)
		}
	})

	// Reproduction 4: after a good run, a partition's manifest deleted and
	// one of its files copied to the next file index.
	t.Run("ManifestDeletedFileCopied", func(t *testing.T) {
		for _, marker := range []bool{true, false} {
			f := folder(t)
			f.prefix += fmt.Sprint("-marker-", marker)
			a := f.readable(marker)
			mk := ownkeys.ManifestKey(f.prefix, "a", "global")
			f.delete(mk)
			copied := f.name("a", "global", 0, 2, 2, ext)
			f.put(copied, f.get(a[1].Key))
			if marker {
				// The completion marker proves the manifest was written.
				wantProblems(t, verify(t, f, exitProblems), kindManifestMissing+" "+mk)
				wantProblems(t, verify(t, f, exitProblems, "--read"), kindManifestMissing+" "+mk, kindDuplicate+" "+copied)
				continue
			}
			rep := verify(t, f, exitUnverified)
			wantProblems(t, rep)
			rep = verify(t, f, exitProblems, "--read")
			wantProblems(t, rep, kindDuplicate+" "+copied)
			if m := rep.Problems[0].Message; !strings.Contains(m, a[1].Key) || !strings.Contains(m, "copy") {
				t.Fatalf("the duplicate's problem does not name the file it copies: %s", m)
			}
		}
		// A copy into another shard is found without reading: a record of a
		// pane lies in one shard only.
		g := folder(t)
		g.prefix += "-shard"
		g.settings("1", ext, 2)
		one := g.written(g.name("a", "global", 0, 2, 0, ext), "r1", "r1")
		other := g.name("a", "global", 1, 2, 0, ext)
		g.put(other, g.get(one.Key))
		wantProblems(t, verify(t, g, exitProblems), kindDuplicate+" "+other)
		// In one shard, two files alike holding one record repeated: with
		// no record limit in the marker, the first could have rolled only by
		// MaxFileBytes, and a copy of the shard's last file to the next
		// index looks the same, so even --read leaves them unverified...
		g.delete(other)
		g.put(g.name("a", "global", 0, 2, 1, ext), g.get(one.Key))
		wantProblems(t, verify(t, g, exitUnverified))
		wantProblems(t, verify(t, g, exitUnverified, "--read"))
		// ...and where the marker's MaxFileRecords is their record count,
		// each is a full file of the record: the sink's, proved by --read.
		full := markerSettings("1", ext, 2)
		for i := range full {
			if full[i].Name == "max-file-records" {
				full[i].Value = "2"
			}
		}
		g.put(ownkeys.SettingsKey(g.prefix), settingsmarker.Encode(full))
		wantProblems(t, verify(t, g, exitOK, "--read"))
	})

	// Reproduction 5: the manifest's record counts multiplied by 1000. By
	// default the counts are the manifest's, and the report says they are
	// unchecked; with --read they are counted from the files.
	t.Run("RecordCounts", func(t *testing.T) {
		f := folder(t)
		a := f.readable(true)
		rep := verify(t, f, exitOK)
		if p := partition(t, rep, "a", "global"); p.Records != 5 || p.RecordsFrom != recordsFromManifest || rep.RecordsFrom != recordsFromManifest {
			t.Fatalf("default records: %+v, report %q", p, rep.RecordsFrom)
		}
		rep = verify(t, f, exitOK, "--read")
		if p := partition(t, rep, "a", "global"); p.Records != 5 || p.RecordsFrom != recordsFromFiles || rep.RecordsFrom != recordsFromFiles {
			t.Fatalf("records read: %+v, report %q", p, rep.RecordsFrom)
		}
		var want []string
		for i := range a {
			a[i].Records *= 1000
			want = append(want, kindRecords+" "+a[i].Key)
		}
		f.manifest("a", "global", a...)
		rep = verify(t, f, exitOK)
		if p := partition(t, rep, "a", "global"); p.Records != 5000 || p.RecordsFrom != recordsFromManifest {
			t.Fatalf("records %+v", p)
		}
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		if r.code != exitOK || !strings.Contains(r.stdout, "5000 records (from the manifest, unchecked)") || !strings.Contains(r.stdout, "record counts: from the manifests, unchecked") {
			t.Fatalf("human report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		wantProblems(t, verify(t, f, exitProblems, "--read"), want...)
	})

	// A file named like s3once's of another extension is a file of its
	// partition: in a partition with a manifest, an extra file; without
	// one, another run's (mixed); without a settings marker, two
	// extensions in one partition are two runs'.
	t.Run("OtherExtension", func(t *testing.T) {
		f := folder(t)
		f.readable(true)
		txt := f.name("a", "global", 0, 2, 2, ".jsonl")
		f.written(txt, "r9")
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindExtra+" "+txt)
		if p := partition(t, rep, "a", "global"); !p.Mixed || p.Files != 4 || len(rep.NamedLikeS3once) != 0 {
			t.Fatalf("partition %+v, named like s3once's %+v", p, rep.NamedLikeS3once)
		}
		g := folder(t)
		g.prefix += "-v1marker"
		g.settings("1", ext, 2)
		g.written(g.name("a", "global", 0, 2, 0, ext), "r1")
		plain := g.name("a", "global", 1, 2, 0, ".jsonl")
		g.written(plain, "r2")
		rep = verify(t, g, exitProblems, "--read")
		wantProblems(t, rep, kindOtherSettings+" "+plain)
		if !partition(t, rep, "a", "global").Mixed {
			t.Fatalf("partitions %+v", rep.Partitions)
		}
		h := folder(t)
		h.prefix += "-nomarker"
		h.written(h.name("a", "global", 0, 2, 0, ".jsonl.gz"), "r1")
		h.written(h.name("a", "global", 1, 2, 0, ".jsonl"), "r2")
		h.written(h.name("b", "global", 1, 2, 0, ".jsonl"), "r3") // one extension a partition
		rep = verify(t, h, exitProblems, "--read")
		wantProblems(t, rep, kindOtherSettings+" "+ownkeys.PartitionFilePrefix(h.prefix, "a", "global"))
		if !strings.Contains(rep.Problems[0].Message, ".jsonl, .jsonl.gz") {
			t.Fatalf("the problem does not name the extensions: %s", rep.Problems[0].Message)
		}
	})

	t.Run("ExtraFile", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		extra := f.name("day=2", "global", 0, 2, 0, ext)
		f.file(extra)
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindExtra+" "+extra)
		if p := partition(t, rep, "day=2", "global"); !p.Mixed || p.Problems != 1 || p.Files != 2 {
			t.Fatalf("partition with an extra file: %+v", p)
		}
		if p := partition(t, rep, "day=1", "global"); p.Mixed || p.Problems != 0 {
			t.Fatalf("another partition: %+v", p)
		}
		if !strings.Contains(rep.Problems[0].Message, "mixed") {
			t.Fatalf("the problem does not name the partition mixed: %s", rep.Problems[0].Message)
		}
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		if r.code != exitProblems || !strings.Contains(r.stdout, "partition day=2 global: 2 files") || !strings.Contains(r.stdout, "MIXED") ||
			!strings.Contains(r.stdout, "[file-extra] "+extra) || !strings.Contains(r.stderr, "problems found in s3://"+f.bucket+"/"+f.prefix+": 1") {
			t.Fatalf("human report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("MissingFile", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		gone := files[1].Key
		if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &gone}); err != nil {
			t.Fatal(err)
		}
		rep := verify(t, f, exitProblems)
		// The completion marker that lists it says so too.
		wantProblems(t, rep, kindMissing+" "+gone, kindMarkerMissing+" "+ownkeys.MarkerKey(f.prefix, "global", 0))
	})

	t.Run("ChangedFile", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		changed := files[3]
		other := body(changed.Key)
		other[0] ^= 1 // the same size, other bytes
		f.put(changed.Key, other)
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindChanged+" "+changed.Key)
		if !strings.Contains(rep.Problems[0].Message, fmt.Sprintf("%016x", changed.CRC64NVME)) {
			t.Fatalf("the problem does not give the manifest's CRC64NVME: %s", rep.Problems[0].Message)
		}
		// A changed size is found too, also by the completion marker that
		// lists the file with its size.
		f.put(changed.Key, append(other, 'x'))
		wantProblems(t, verify(t, f, exitProblems), kindChanged+" "+changed.Key, kindMarkerMissing+" "+ownkeys.MarkerKey(f.prefix, "global", 0))
	})

	t.Run("SettingsMarker", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		key := ownkeys.SettingsKey(f.prefix)
		f.settings("3", ext, 2)
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindSettings+" "+key)
		if !strings.Contains(rep.Problems[0].Message, `output version "3"`) || rep.Settings.Error == "" {
			t.Fatalf("a later output version: %+v", rep)
		}
		f.put(key, []byte("s3once-settings 2\nformat=jsonl\n"))
		wantProblems(t, verify(t, f, exitProblems), kindSettings+" "+key)
		f.put(key, []byte("garbage"))
		wantProblems(t, verify(t, f, exitProblems), kindSettings+" "+key)
		// Manifests without the marker written before them: it was deleted.
		if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
			t.Fatal(err)
		}
		wantProblems(t, verify(t, f, exitProblems), kindSettingsMissing+" "+key)
	})

	// A marker cut at a line boundary, or to its header line, is damaged:
	// a problem naming the settings it lacks, never a folder without a
	// marker (which would be of output version 1).
	t.Run("DamagedSettingsMarker", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		key := ownkeys.SettingsKey(f.prefix)
		whole := settingsmarker.Encode(markerSettings("2", ext, 2))
		lines := bytes.SplitAfter(whole, []byte{'\n'})
		for n, says := range map[int]string{
			1:              "holds no setting but its header line",
			5:              "lacks settings format, max-batch-bytes, max-file-bytes, max-file-records, output-version, parquet-compression, parquet-library, parquet-row-group-bytes, parquet-row-group-records, shards (damaged",
			len(lines) - 2: "lacks settings shards (damaged",
		} {
			f.put(key, bytes.Join(lines[:n], nil))
			rep := verify(t, f, exitProblems)
			wantProblems(t, rep, kindSettings+" "+key)
			msg := rep.Problems[0].Message
			for _, w := range []string{"s3://" + f.bucket + "/" + key, says, "restore it from the settings", "fresh Prefix", errcode.SettingsDamaged.Token()} {
				if !strings.Contains(msg, w) {
					t.Errorf("%d lines: the problem does not say %q: %s", n, w, msg)
				}
			}
			if !rep.Settings.Found || rep.Settings.Error == "" || rep.Settings.OutputVersion != "" {
				t.Errorf("%d lines: the report's settings: %+v", n, rep.Settings)
			}
		}
		f.put(key, whole)
		wantProblems(t, verify(t, f, exitOK))
	})

	t.Run("MarkerOfOtherSettings", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		f.settings("2", ext, 3) // the files are named for 2 shards
		rep := verify(t, f, exitProblems)
		var want []string
		for _, e := range files {
			want = append(want, kindOtherSettings+" "+e.Key)
		}
		wantProblems(t, rep, want...)
		// Another extension: the files cannot be this folder's.
		f.settings("2", ".parquet", 2)
		rep = verify(t, f, exitProblems)
		wantProblems(t, rep, want...)
	})

	// Automatic sharding: each partition has its own count, at most the
	// marker's bound; a file named for more is another run's.
	t.Run("AutoSharding", func(t *testing.T) {
		f := folder(t)
		f.settings("2", ext, "auto:4")
		f.manifest("small", "global", f.file(f.name("small", "global", 0, 1, 0, ext)))
		f.manifest("large", "global", f.file(f.name("large", "global", 0, 3, 0, ext)), f.file(f.name("large", "global", 1, 3, 0, ext)), f.file(f.name("large", "global", 2, 3, 0, ext)))
		rep := verify(t, f, exitOK)
		wantProblems(t, rep)
		if rep.Settings.AutoMaxShards != 4 || rep.Settings.Shards != 0 {
			t.Fatalf("the report's settings: %+v; want automatic sharding of at most 4", rep.Settings)
		}
		over := f.file(f.name("huge", "global", 0, 6, 0, ext))
		f.manifest("huge", "global", over)
		wantProblems(t, verify(t, f, exitProblems), kindOtherSettings+" "+over.Key)
	})

	// A mixed partition as FinalizeCommit "always" can leave one: the
	// second run (3 shards) committed its files and its manifest beside
	// the first run's (2 shards).
	t.Run("MixedPartition", func(t *testing.T) {
		f := folder(t)
		f.settings("2", ext, 3)
		old := []string{f.file(f.name("d", "global", 0, 2, 0, ext)).Key, f.file(f.name("d", "global", 1, 2, 0, ext)).Key}
		f.manifest("d", "global", f.file(f.name("d", "global", 0, 3, 0, ext)), f.file(f.name("d", "global", 2, 3, 0, ext)))
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindExtra+" "+old[0], kindExtra+" "+old[1])
		if p := partition(t, rep, "d", "global"); !p.Mixed || p.Files != 4 || p.Entries != 2 {
			t.Fatalf("mixed partition: %+v", p)
		}
	})

	// Without a manifest the listing still finds two runs in a partition.
	t.Run("MixedByListing", func(t *testing.T) {
		f := folder(t) // a version-1 folder: no marker
		f.file(f.name("d", "global", 0, 2, 0, ext))
		f.file(f.name("d", "global", 0, 3, 0, ext))
		f.file(f.name("e", "global", 0, 2, 0, ext))
		split := ownkeys.FileKey(f.prefix, "e", ownkeys.FileName{Window: "global", Shard: 0, Shards: 2, SubBatch: 1, SubBatches: 2, Ext: ext})
		f.file(split)
		f.file(f.name("ok", "global", 0, 2, 0, ext))
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindShardsMixed+" "+ownkeys.PartitionFilePrefix(f.prefix, "d", "global"), kindShardsMixed+" "+split)
		if !partition(t, rep, "d", "global").Mixed || !partition(t, rep, "e", "global").Mixed || partition(t, rep, "ok", "global").Mixed {
			t.Fatalf("partitions %+v", rep.Partitions)
		}
		// With a marker, a file named for other Shards is another run's.
		g := folder(t)
		g.prefix += "-marked"
		g.settings("2", ext, 3)
		stale := g.file(g.name("d", hour, 0, 2, 0, ext)).Key
		g.file(g.name("d", hour, 0, 3, 0, ext))
		wantProblems(t, verify(t, g, exitProblems), kindOtherSettings+" "+stale)
	})

	t.Run("NamedLikeS3once", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		foreign := f.name("day=1", "global", 0, 2, 99, ext+".other")
		f.put(foreign, []byte("a user's file"))
		padded := ownkeys.Folder(f.prefix) + "day=1/global-pane-0-shard-000001-of-00002-file-00000" + ext
		f.put(padded, []byte("x"))
		alone := f.name("day=9", "20240601T110000Z-20240601T120000Z", 0, 2, 0, ".csv") // a window without a completion marker
		f.put(alone, []byte("y"))
		// Only a key whose numbers s3once does not write is named like
		// s3once's; one of another extension is a file of its partition,
		// another run's (the sink's partition check counts it too).
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindExtra+" "+foreign, kindOtherSettings+" "+alone)
		if len(rep.NamedLikeS3once) != 1 || rep.NamedLikeS3once[0].Key != padded || !strings.Contains(rep.NamedLikeS3once[0].Reason, "numbers") {
			t.Fatalf("named like s3once's: %+v, want %s", rep.NamedLikeS3once, padded)
		}
		if p := partition(t, rep, "day=1", "global"); p.Files != 4 || !p.Mixed {
			t.Fatalf("a file of another extension was not counted: %+v", p)
		}
		if p := partition(t, rep, "day=9", "20240601T110000Z-20240601T120000Z"); p.Files != 1 || !p.Mixed {
			t.Fatalf("a partition of another extension's file: %+v", p)
		}
	})

	t.Run("UploadLeft", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		open := func(key string) string {
			out, err := client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			return aws.ToString(out.UploadId)
		}
		key := f.name("day=4", "global", 0, 2, 0, ext)
		id := open(key)
		other := open(ownkeys.Folder(f.prefix) + "another-tool.bin")
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindUploadLeft+" "+key)
		if p := rep.Problems[0]; p.UploadID != id || !strings.Contains(p.Message, "s3once sweep") {
			t.Fatalf("upload problem %+v", p)
		}
		if len(rep.Uploads) != 2 {
			t.Fatalf("uploads %+v", rep.Uploads)
		}
		for _, u := range rep.Uploads {
			if u.Initiated.IsZero() || (u.UploadID == id) != u.Own || (u.UploadID != id && u.UploadID != other) {
				t.Fatalf("upload %+v (s3once's is %s, another tool's %s)", u, id, other)
			}
		}
		if m := rep.Problems[0].Message; strings.Contains(m, "left-over") {
			t.Fatalf("an upload of an empty key called a left-over: %s", m)
		}
		// An upload of a key that holds a committed object (an earlier
		// attempt's, after a crash and a rerun) can never complete: a
		// left-over, which the sweep removes at any age.
		committed := files[0].Key
		leftID := open(committed)
		rep = verify(t, f, exitProblems)
		wantProblems(t, rep, kindUploadLeft+" "+key, kindUploadLeft+" "+committed)
		for _, p := range rep.Problems {
			if p.UploadID != leftID {
				continue
			}
			leftID = ""
			if !strings.Contains(p.Message, "left-over") || !strings.Contains(p.Message, "never complete") ||
				!strings.Contains(p.Message, fmt.Sprintf("'s3once sweep --bucket %s --prefix %s'", f.bucket, f.prefix)) {
				t.Fatalf("left-over upload: %s", p.Message)
			}
		}
		if leftID != "" {
			t.Fatalf("no problem names the upload %s: %+v", leftID, rep.Problems)
		}
	})

	// A completion marker written before all of its window's files were
	// committed (an early firing).
	t.Run("CompletionMarkerEarly", func(t *testing.T) {
		f := folder(t)
		files := f.consistent()
		key := ownkeys.MarkerKey(f.prefix, "global", 0)
		f.successMarker(key, files[0], files[1])
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindMarkerIncomplete+" "+key)
		if m := rep.Problems[0].Message; !strings.Contains(m, "2 more") || !strings.Contains(m, files[2].Key) {
			t.Fatalf("the problem does not name what the marker leaves out: %s", m)
		}
		// A later pane's marker lists that pane's files only.
		g := folder(t)
		g.prefix += "-panes"
		g.settings("1", ext, 2) // output version 1 writes a marker per pane
		p0 := g.written(g.name("d", "global", 0, 2, 0, ext), "a")
		p1 := g.written(ownkeys.FileKey(g.prefix, "d", ownkeys.FileName{Window: "global", Pane: 1, Shard: 1, Shards: 2, Ext: ext}), "b")
		g.successMarker(ownkeys.MarkerKey(g.prefix, "global", 0), p0)
		g.successMarker(ownkeys.MarkerKey(g.prefix, "global", 1), p1)
		wantProblems(t, verify(t, g, exitOK, "--read"))
	})

	t.Run("CompletionMarkerUnreadable", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		key := ownkeys.MarkerKey(f.prefix, "global", 0)
		f.put(key, []byte("{\"key\":\"x\"}\n"))
		wantProblems(t, verify(t, f, exitProblems), kindMarkerUnreadable+" "+key)
	})

	t.Run("ManifestUnreadable", func(t *testing.T) {
		f := folder(t)
		f.consistent()
		key := ownkeys.ManifestKey(f.prefix, "day=2", "global")
		f.put(key, []byte("{}\n"))
		foreign := f.name("day=2", "global", 0, 2, 0, ".csv")
		f.put(foreign, []byte("a user's"))
		rep := verify(t, f, exitProblems)
		// The completion marker, listing the files of the window, leaves
		// that file out: the manifest that would tell cannot be read.
		wantProblems(t, rep, kindManifest+" "+key, kindMarkerIncomplete+" "+ownkeys.MarkerKey(f.prefix, "global", 0))
		// A file of another extension is a file of its partition.
		if p := partition(t, rep, "day=2", "global"); len(rep.NamedLikeS3once) != 0 || p.Files != 2 {
			t.Fatalf("named like s3once's: %+v, partition %+v", rep.NamedLikeS3once, p)
		}
	})

	// A folder at the bucket's root, the default staging folder inside it:
	// the side objects there are skipped.
	t.Run("WholeBucket", func(t *testing.T) {
		f := &outFolder{t: t, client: client, bucket: srv.Bucket(t), prefix: ""}
		f.consistent()
		f.put(ownkeys.SideObjectKey(s3call.DefaultStagingPrefix, "upload", 1, "0a1b"), []byte("a tail"))
		rep := verify(t, f, exitOK, "--whole-bucket")
		wantProblems(t, rep)
		if len(rep.Partitions) != 3 || rep.OtherKeys != 1 {
			t.Fatalf("report %+v", rep)
		}
	})

	t.Run("NoOutput", func(t *testing.T) {
		f := folder(t)
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindNoOutput+" "+ownkeys.Folder(f.prefix))
		if m := rep.Problems[0].Message; !strings.Contains(m, "check --bucket and --prefix") {
			t.Fatalf("an empty folder's problem does not lead to --bucket and --prefix: %s", m)
		}
		// Another tool's upload is not s3once's output, nor a run of it.
		other := ownkeys.Folder(f.prefix) + "another-tool.bin"
		if _, err := client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &other}); err != nil {
			t.Fatal(err)
		}
		rep = verify(t, f, exitProblems)
		wantProblems(t, rep, kindNoOutput+" "+ownkeys.Folder(f.prefix))
		if m := rep.Problems[0].Message; !strings.Contains(m, "check --bucket and --prefix") {
			t.Fatalf("a folder with another tool's upload alone: %s", m)
		}
	})

	// A run killed before it committed anything leaves open uploads and
	// nothing else: the folder has no output yet, and the report says so
	// and lists the uploads, without leading to --bucket and --prefix.
	t.Run("NoOutputYet", func(t *testing.T) {
		f := folder(t)
		var ids []string
		var keys []string
		for shard := range 2 {
			key := f.name("", "global", shard, 2, 0, ext)
			out, err := client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			ids, keys = append(ids, aws.ToString(out.UploadId)), append(keys, key)
		}
		rep := verify(t, f, exitProblems)
		wantProblems(t, rep, kindNoOutput+" "+ownkeys.Folder(f.prefix), kindUploadLeft+" "+keys[0], kindUploadLeft+" "+keys[1])
		for _, p := range rep.Problems {
			if p.Kind != kindNoOutput {
				continue
			}
			if !strings.Contains(p.Message, "no output yet") || !strings.Contains(p.Message, "(2, listed here)") || strings.Contains(p.Message, "--bucket") {
				t.Fatalf("the no-output problem of a folder with open uploads: %s", p.Message)
			}
		}
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		lines := strings.Split(r.stdout, "\n")
		var problems []string
		for _, l := range lines {
			if strings.HasPrefix(l, "    [") {
				problems = append(problems, l)
			}
		}
		if r.code != exitProblems || len(problems) != 3 || !strings.Contains(problems[0], "[no-output]") || !strings.Contains(problems[0], "no output yet") ||
			strings.Contains(r.stdout, "check --bucket") {
			t.Fatalf("human report: exit %d, want no output yet first, then the uploads, and no --bucket lead:\n%s", r.code, r.stdout)
		}
		for i, id := range ids {
			if !strings.Contains(r.stdout, keys[i]+" upload "+id) {
				t.Errorf("the human report does not list %s upload %s:\n%s", keys[i], id, r.stdout)
			}
		}
	})

	t.Run("CouldNotVerify", func(t *testing.T) {
		f := folder(t)
		f.bucket = "no-such-bucket-here"
		rep := verify(t, f, exitUnverified)
		if rep.Outcome != outcomeIncomplete || len(rep.Unverified) == 0 || !strings.Contains(rep.Unverified[0].Error, "no-such-bucket-here") {
			t.Fatalf("report %+v", rep)
		}
		r := runCmd(t, "", env, "verify", "--bucket", f.bucket, "--prefix", f.prefix, "--endpoint", srv.Endpoint(), "--path-style")
		if r.code != exitUnverified || !strings.Contains(r.stdout, "INCOMPLETE") || !strings.Contains(r.stderr, "could not verify") {
			t.Fatalf("human report: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		// Without a settings marker, files of two extensions in one
		// partition are two runs' files: a mixed partition.
		g := folder(t)
		g.file(g.name("d", "global", 0, 2, 0, ".jsonl"))
		g.put(g.name("d", "global", 0, 2, 99, ".jsonl.other"), []byte("a user's"))
		rep = verify(t, g, exitProblems)
		wantProblems(t, rep, kindOtherSettings+" "+ownkeys.PartitionFilePrefix(g.prefix, "d", "global"))
		if !strings.Contains(rep.Problems[0].Message, ".jsonl, .jsonl.other") {
			t.Fatalf("report %+v", rep)
		}
	})

	t.Run("Usage", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			msg  string
		}{
			{[]string{"verify"}, "--bucket is required"},
			{[]string{"verify", "--bucket", bucket}, "--prefix is required"},
			{[]string{"verify", "--bucket", bucket, "--prefix", "p", "x"}, "unexpected arguments"},
			{[]string{"verify", "--bucket", bucket, "--prefix", "p/q", "--staging-prefix", "p"}, "--staging-prefix"},
			{[]string{"verify", "--bucket", bucket, "--prefix", "p", "--staging-prefix", ""}, "--staging-prefix"},
			{[]string{"verify", "--bucket", bucket, "--prefix", "p", "--concurrency", "0"}, "--concurrency"},
		} {
			if r := runCmd(t, "", env, c.args...); r.code != exitUsage || !strings.Contains(r.stderr, c.msg) {
				t.Errorf("%v: exit %d: %s", c.args, r.code, r.stderr)
			}
		}
		if r := runCmd(t, "", env, "verify", "--help"); r.code != exitOK || !strings.Contains(r.stdout, "3  could not verify") {
			t.Errorf("verify --help: exit %d: %s", r.code, r.stdout)
		}
	})
}

// TestVerifyUnderFaults: every call verify makes goes through the
// committer's Policy (a transient failure is retried and the folder
// verifies); a call that keeps failing leaves its key unverified (exit 3),
// and a problem found elsewhere still wins (exit 1).
func TestVerifyUnderFaults(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 1})
	bucket := srv.Bucket(t)
	f := &outFolder{t: t, client: client, bucket: bucket, prefix: "faults"}
	files := f.consistent()
	run := func(t *testing.T, hook func(fc *s3fault.Client)) *verifyReport {
		t.Helper()
		fc := s3fault.New(client)
		hook(fc)
		c := s3bucket.New(fc, s3bucket.Options{MaxAttempts: 3, MaxRounds: 3, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
		rep := verifyFolder(context.Background(), c, verifyOptions{bucket: bucket, prefix: f.prefix, staging: s3call.DefaultStagingPrefix, concurrency: 4})
		if len(fc.Faults()) == 0 {
			t.Fatal("no fault was injected")
		}
		return rep
	}
	onKey := func(key string, k s3fault.Kind) s3fault.Hook {
		return func(c s3fault.Call) s3fault.Kind {
			if c.Key == key {
				return k
			}
			return s3fault.None
		}
	}
	target := files[2].Key
	manifestKey := ownkeys.ManifestKey(f.prefix, "day=2", "global")

	t.Run("TransientFailuresAreRetried", func(t *testing.T) {
		rep := run(t, func(fc *s3fault.Client) {
			for _, op := range []s3fault.Op{s3fault.HeadObject, s3fault.GetObject, s3fault.ListObjectsV2, s3fault.ListMultipartUploads} {
				fc.On(op, s3fault.FirstN(2, s3fault.SlowDown))
			}
		})
		if rep.ExitCode != exitOK || len(rep.Unverified) != 0 || len(rep.Problems) != 0 {
			t.Fatalf("report %+v", rep)
		}
	})
	t.Run("LookupKeepsFailing", func(t *testing.T) {
		rep := run(t, func(fc *s3fault.Client) { fc.On(s3fault.HeadObject, onKey(target, s3fault.SlowDown)) })
		if rep.ExitCode != exitUnverified || rep.Outcome != outcomeIncomplete || len(rep.Problems) != 0 ||
			len(rep.Unverified) != 1 || rep.Unverified[0].Key != target || !strings.Contains(rep.Unverified[0].Error, "s3://"+bucket+"/"+target) {
			t.Fatalf("report %+v", rep)
		}
	})
	t.Run("ManifestReadKeepsFailing", func(t *testing.T) {
		rep := run(t, func(fc *s3fault.Client) { fc.On(s3fault.GetObject, onKey(manifestKey, s3fault.BeforeSend)) })
		if rep.ExitCode != exitUnverified || len(rep.Unverified) != 1 || rep.Unverified[0].Key != manifestKey {
			t.Fatalf("report %+v", rep)
		}
	})
	t.Run("UploadListingKeepsFailing", func(t *testing.T) {
		rep := run(t, func(fc *s3fault.Client) { fc.On(s3fault.ListMultipartUploads, s3fault.Always(s3fault.SlowDown)) })
		if rep.ExitCode != exitUnverified || len(rep.Unverified) != 1 || !strings.Contains(rep.Unverified[0].Error, "multipart uploads") {
			t.Fatalf("report %+v", rep)
		}
	})
	t.Run("AProblemWins", func(t *testing.T) {
		extra := f.name("day=2", "global", 0, 2, 0, ext)
		f.file(extra)
		t.Cleanup(func() {
			_, _ = client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &extra})
		})
		rep := run(t, func(fc *s3fault.Client) { fc.On(s3fault.HeadObject, onKey(target, s3fault.SlowDown)) })
		if rep.ExitCode != exitProblems || rep.Outcome != outcomeProblems || len(rep.Problems) != 1 || rep.Problems[0].Kind != kindExtra || len(rep.Unverified) != 1 {
			t.Fatalf("report %+v", rep)
		}
	})
}

// TestVerifyCallsS3ThroughTheCommitter: verify's own files import no S3
// SDK package, so every call it makes is one of the committer's, bounded
// and under its Policy.
func TestVerifyCallsS3ThroughTheCommitter(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range []string{"verify.go", "verify_folder.go", "verify_read.go"} {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(p, "github.com/aws/") {
				t.Errorf("%s imports %s: call S3 through the committer", name, p)
			}
		}
	}
}

// TestVerifyKindsDocumented: every problem kind verify reports is named in
// its help and in docs/operating.md.
func TestVerifyKindsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "verify_folder.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "kind") {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		kind, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.Contains(verifyUsage, kind) {
			t.Errorf("verify's help does not name the problem kind %q", kind)
		}
		if !strings.Contains(string(docs), "`"+kind+"`") {
			t.Errorf("docs/operating.md does not name the problem kind %q", kind)
		}
		return true
	})
	if n < 10 {
		t.Fatalf("found %d problem kinds in verify_folder.go", n)
	}
}

// TestReadContent: verify --read decodes a file with its codec and format
// and counts its records where a record can be counted (lines of text and
// JSON Lines, rows of Parquet from the footer; not CSV); a file cut short
// or of other bytes does not decode.
func TestReadContent(t *testing.T) {
	gz := func(b []byte) []byte {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return z.Bytes()
	}
	zst := func(b []byte) []byte {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	}
	type row struct {
		ID   int64  `parquet:"id"`
		Name string `parquet:"name"`
	}
	var pq bytes.Buffer
	if err := parquet.Write(&pq, []row{{1, "a"}, {2, "b"}, {3, "c"}}); err != nil {
		t.Fatal(err)
	}
	lines := []byte("\"a\"\n\"b\"\n\"b\"\n")
	for _, c := range []struct {
		name    string
		body    []byte
		ext     string
		records int64 // -1: not counted
		one     bool
		err     string
	}{
		{"jsonl", lines, ".jsonl", 3, false, ""},
		{"jsonl.gz", gz(lines), ".jsonl.gz", 3, false, ""},
		{"two gzip members", append(gz(lines), gz(lines)...), ".jsonl.gz", 6, false, ""},
		{"jsonl.zst", zst(lines), ".jsonl.zst", 3, false, ""},
		{"one record repeated", []byte("x\nx\n"), ".txt", 2, true, ""},
		{"text cut short", []byte("x\ny"), ".txt", 0, false, "newline"},
		{"not json", []byte("x\n"), ".jsonl", 0, false, "not a JSON value"},
		{"gzip cut short", gz(lines)[:20], ".jsonl.gz", 0, false, "EOF"},
		{"not gzip", lines, ".jsonl.gz", 0, false, "gzip"},
		{"empty", gz(nil), ".txt.gz", 0, false, "no record"},
		{"csv", []byte("a,b\n\"c\nd\",e\n"), ".csv", -1, false, ""},
		{"csv broken", []byte("a,\"b\n"), ".csv", 0, false, "csv"},
		{"parquet", pq.Bytes(), ".parquet", 3, false, ""},
		{"parquet cut", pq.Bytes()[:pq.Len()-1], ".parquet", 0, false, "PAR1"},
		{"unknown format", gz(lines), ".avro.gz", 0, false, errFormatUnknown.Error()},
	} {
		got, err := readContent(c.body, kindOf(c.ext, "", "", ""))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.records < 0 && got.counted, c.records >= 0 && (!got.counted || got.records != c.records || got.oneRecord != c.one):
			t.Errorf("%s: %+v, want %d records (one repeated: %v)", c.name, got, c.records, c.one)
		}
	}
	// The settings marker's Format and Compression win for its extension;
	// a Format registered under another name is not one verify knows.
	if k := kindOf(".csv", ".csv", "orders-csv", "none"); k != (fileKind{codec: "none"}) {
		t.Errorf("a registered CSV format: %+v", k)
	}
	if k := kindOf(".jsonl.gz", ".jsonl.gz", "jsonl", "gzip"); k != (fileKind{codec: "gzip", format: "jsonl"}) {
		t.Errorf("the marker's jsonl: %+v", k)
	}
}
