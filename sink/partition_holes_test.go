package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

func init() {
	register.Function1x1(resultKey)
}

// resultKey is a committed file's key, as a record of a listing.
func resultKey(r FileResult) string { return r.Key }

// lettered returns n records that all go to letter=a under firstLetter,
// sorting after every record of an earlier call with a smaller from.
func lettered(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("a%06d", from+i)
	}
	return out
}

// TestSupersetRerunRefused: run 1 writes 200 records into one partition,
// in two files of 100; run 2 has the same 200 and 50 more that sort after
// them, so its first two files come out byte-identical and its third is
// new. The partition is complete (its manifest lists two files): the
// barrier refuses run 2 before any commit, saying what it would have
// added, and the folder stays as run 1 left it.
func TestSupersetRerunRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	tune := func(cfg *Config) { cfg.Shards, cfg.MaxFileRecords = 1, 100 }
	if _, err := partitionRun(t, bucket, "out", lettered(0, 200), tune); err != nil {
		t.Fatal(err)
	}
	before := everything(t, c, bucket, "out")
	third, manifests := "", 0
	for k := range before {
		if strings.Contains(k, "-file-00002") {
			t.Fatalf("run 1 wrote a third file %s", k)
		}
		if strings.Contains(k, "-file-00001") {
			third = strings.Replace(k, "-file-00001", "-file-00002", 1)
		}
		if ownkeys.IsManifest("", k) {
			manifests++
		}
	}
	if third == "" || manifests != 1 {
		t.Fatalf("run 1 wrote no second file, or not one manifest: %v", keysOf(before))
	}

	counts, err := partitionRun(t, bucket, "out", lettered(0, 250), tune)
	if err == nil {
		t.Fatal("the superset rerun succeeded; want it refused")
	}
	msg := err.Error()
	if !errcode.Has(errors.New(msg), errcode.PartitionChanged) {
		t.Errorf("the failure lacks %s: %s", errcode.PartitionChanged.Token(), msg)
	}
	for _, want := range []string{"is complete", "this run would add", "out/" + third, "nothing of this run was committed", "fresh Prefix"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "added nothing") {
		t.Errorf("the failure says the run added nothing: %s", msg)
	}
	if n := counts["files_committed"]; n != 0 {
		t.Errorf("files_committed = %d; want 0", n)
	}
	if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the refused run changed the folder: %v, was %v", keysOf(after), keysOf(before))
	}
	checkClean(t, c, bucket)

	// A subset of a complete partition: the run adds nothing, and is
	// refused for the file it does not write.
	_, err = partitionRun(t, bucket, "out", lettered(0, 100), tune)
	if err == nil || !strings.Contains(err.Error(), "adds nothing to it, but does not write") {
		t.Errorf("the subset rerun: %v; want a refusal that says it adds nothing", err)
	}
	if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the refused subset run changed the folder: %v", keysOf(after))
	}

	// Run 1's input again keeps every file, and a new partition beside
	// them is written.
	if _, err := partitionRun(t, bucket, "out", append(lettered(0, 200), "b1", "b2"), tune); err != nil {
		t.Fatalf("a rerun of the first input with a new partition: %v", err)
	}
	after := everything(t, c, bucket, "out")
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Errorf("%s changed", k)
		}
	}
	if len(after) <= len(before) {
		t.Errorf("the new partition letter=b was not written: %v", keysOf(after))
	}
}

// TestDamagedManifestRefused: a partition manifest cut outside s3once is
// damaged: the barrier refuses the run before any commit, with its own
// code, naming the manifest.
func TestDamagedManifestRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	tune := func(cfg *Config) { cfg.Shards, cfg.MaxFileRecords = 1, 100 }
	in := lettered(0, 200)
	if _, err := partitionRun(t, bucket, "out", in, tune); err != nil {
		t.Fatal(err)
	}
	before := everything(t, c, bucket, "out")
	mkey := strings.TrimPrefix(ownkeys.ManifestKey("out", "letter=a", "global"), "out/")
	if _, ok := before[mkey]; !ok {
		t.Fatalf("no manifest %s: %v", mkey, keysOf(before))
	}
	// Cut within a line: a cut at a line boundary decodes, as a manifest
	// that lists fewer files, and the run is refused as changing the
	// partition (TestSupersetRerunRefused's subset).
	body := before[mkey]
	cut := body[:bytes.IndexByte(body, '\n')/2]
	put(t, c, bucket, "out/"+mkey, cut)
	before[mkey] = cut
	_, err := partitionRun(t, bucket, "out", in, tune)
	if err == nil {
		t.Fatal("a run over a damaged manifest succeeded")
	}
	if !errcode.Has(errors.New(err.Error()), errcode.ManifestDamaged) || !strings.Contains(err.Error(), "out/"+mkey) {
		t.Errorf("the failure does not name the damaged manifest with %s: %v", errcode.ManifestDamaged.Token(), err)
	}
	if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the refused run changed the folder: %v", keysOf(after))
	}
}

// TestLegacyFolderOtherCodecRefused: a folder an earlier release wrote
// (output version 1, no settings marker) rerun with another Compression
// writes files of another extension into the same partitions: they count
// as the partitions' files, so the rerun is refused before any commit.
func TestLegacyFolderOtherCodecRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(400, 43)
	v1 := func(cfg *Config) { cfg.OutputVersion = 1 }
	earlierRelease(t, c, bucket, "old", in, v1)
	before := everything(t, c, bucket, "old")
	_, err := partitionRun(t, bucket, "old", in, func(cfg *Config) { v1(cfg); cfg.Compression = "gzip" })
	checkRefusedPartition(t, err, ".txt")
	if after := everything(t, c, bucket, "old"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the refused run changed the folder: %v", keysOf(after))
	}
	checkClean(t, c, bucket)
}

// TestManifestCountsEditedRefused: a manifest whose record counts were
// edited (sizes and checksums left right) is damaged: a run that adds a
// new partition beside it is refused by the barrier before any commit,
// naming the manifest and the count, and the new partition is not written.
func TestManifestCountsEditedRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	tune := func(cfg *Config) { cfg.Shards, cfg.MaxFileRecords = 1, 100 }
	in := lettered(0, 150)
	if _, err := partitionRun(t, bucket, "out", in, tune); err != nil {
		t.Fatal(err)
	}
	mkey := ownkeys.ManifestKey("out", "letter=a", "global")
	before := everything(t, c, bucket, "out")
	rel := strings.TrimPrefix(mkey, "out/")
	edited := bytes.Replace(before[rel], []byte(`"records":100}`), []byte(`"records":100000}`), 1)
	if bytes.Equal(edited, before[rel]) {
		t.Fatalf("the manifest lists no file of 100 records: %q", before[rel])
	}
	put(t, c, bucket, mkey, edited)
	before[rel] = edited
	counts, err := partitionRun(t, bucket, "out", append(slices.Clone(in), "b1", "b2"), tune)
	if err == nil {
		t.Fatal("a run beside a manifest with edited counts succeeded")
	}
	if !errcode.Has(errors.New(err.Error()), errcode.ManifestDamaged) || !strings.Contains(err.Error(), mkey) || !strings.Contains(err.Error(), "100000 records") {
		t.Errorf("the failure does not name the manifest and its count with %s: %v", errcode.ManifestDamaged.Token(), err)
	}
	if n := counts["files_committed"]; n != 0 {
		t.Errorf("files_committed = %d; want 0", n)
	}
	if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the refused run changed the folder: %v", keysOf(after))
	}
}

// TestVersionOneNeedsTheBarrier: output version 1 keeps no partition
// manifests, so it is written only through the run-wide barrier. In a
// folder of an earlier release (no settings marker), a rerun with another
// MaxFileRecords, whose files are named like the folder's: with
// FinalizeCommit "always" the configuration is refused, and a streaming
// pipeline is refused while it is built; with the barrier the run is
// refused before any commit. The folder is as it was.
func TestVersionOneNeedsTheBarrier(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := lettered(0, 120)
	v1 := func(cfg *Config) { cfg.OutputVersion, cfg.Shards, cfg.MaxFileRecords = 1, 1, 50 }
	earlierRelease(t, c, bucket, "old", in, v1)
	before := everything(t, c, bucket, "old")

	cfg := testConfig(bucket, "old")
	v1(&cfg)
	cfg.MaxFileRecords, cfg.FinalizeCommit = 40, FinalizeAlways
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "needs output version 2") {
		t.Errorf("Validate with FinalizeCommit always and OutputVersion 1: %v; want it refused", err)
	}

	cfg.FinalizeCommit = ""
	_, s := beam.NewPipelineWithRoot()
	now := time.Now()
	ticks := beam.ParDo(s, tickName, periodic.Impulse(s, now, now.Add(time.Minute), time.Second, false))
	if _, err := TryWrite(s, ticks, cfg); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("TryWrite of unbounded input with OutputVersion 1: %v; want it refused naming the unbounded input", err)
	}

	_, err := partitionRun(t, bucket, "old", in, func(cfg *Config) { v1(cfg); cfg.MaxFileRecords = 40 })
	if err == nil {
		t.Error("the changed rerun with the barrier succeeded")
	}
	if after := everything(t, c, bucket, "old"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("the run refused by the barrier changed the folder: %v", keysOf(after))
	}
}

// earlierRelease writes in into an output-version-1 folder at prefix and
// deletes its settings marker, as an earlier release left none.
func earlierRelease(t *testing.T, c *s3.Client, bucket, prefix string, in []string, v1 func(*Config)) {
	t.Helper()
	if _, err := partitionRun(t, bucket, prefix, in, v1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(ownkeys.SettingsKey(prefix))}); err != nil {
		t.Fatal(err)
	}
}

// threeSinks is the bounded program of three sinks: the first two write
// in1 and in2, the third a listing of the keys the first two committed.
func threeSinks(t *testing.T, bucket string, in1, in2 []string) error {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	cfg := func(prefix string) Config {
		cfg := testConfig(bucket, prefix)
		cfg.Shards, cfg.MaxFileRecords = 2, 100
		return cfg
	}
	first := Write(s.Scope("one"), beam.CreateList(s, in1), cfg("one"))
	second := Write(s.Scope("two"), beam.CreateList(s, in2), cfg("two"))
	listing := beam.ParDo(s, resultKey, beam.Flatten(s, first, second))
	for _, col := range []beam.PCollection{first, listing} {
		if applies, why := barrierApplies(mustSettings(t, cfg("x")), s, col); !applies {
			t.Fatalf("no run-wide barrier for a sink fed by another sink's results: %s", why)
		}
	}
	Write(s.Scope("three"), listing, cfg("three"))
	_, err := beam.Run(context.Background(), "prism", p)
	return err
}

func mustSettings(t *testing.T, cfg Config) settings {
	t.Helper()
	st, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestThreeSinksBounded: in a bounded program whose third sink writes the
// listing of the files the first two committed, every sink gets the
// run-wide barrier, although Beam marks the writers' output unbounded; a
// changed rerun then leaves all three folders as they were.
func TestThreeSinksBounded(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in1, in2 := words(500, 51), words(300, 52)
	if err := threeSinks(t, bucket, in1, in2); err != nil {
		t.Fatal(err)
	}
	before := map[string]map[string][]byte{}
	for _, p := range []string{"one", "two", "three"} {
		before[p] = everything(t, c, bucket, p)
		if len(before[p]) == 0 {
			t.Fatalf("the first run wrote nothing under %s", p)
		}
	}
	// The first sink's input grows: its partitions are complete, so it is
	// refused; the second's is the same.
	if err := threeSinks(t, bucket, append(in1, words(50, 53)...), in2); err == nil {
		t.Fatal("the changed rerun succeeded")
	}
	for _, p := range []string{"one", "two", "three"} {
		if after := everything(t, c, bucket, p); !maps.EqualFunc(before[p], after, bytes.Equal) {
			t.Errorf("the changed rerun altered %s: %v, was %v", p, keysOf(after), keysOf(before[p]))
		}
	}
}

// TestEffectivelyBounded: a collection Beam marks unbounded only because
// an s3once writer is upstream is bounded for the sink; one downstream of
// periodic.Impulse, or of a test stream, is not.
func TestEffectivelyBounded(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	results := Write(s, beam.CreateList(s, []string{"a"}), testConfig("bucket-name", "x"))
	if b, _ := isBounded(results); b {
		t.Fatal("Beam marks a Write's results bounded: the test proves nothing")
	}
	if b, known := effectivelyBounded(s, results); !b || !known {
		t.Errorf("effectivelyBounded(Write's results) = %v, %v; want bounded", b, known)
	}
	keys := beam.ParDo(s, resultKey, results)
	if b, known := effectivelyBounded(s, keys); !b || !known {
		t.Errorf("effectivelyBounded(a ParDo of Write's results) = %v, %v; want bounded", b, known)
	}
	now := time.Now()
	ticks := periodic.Impulse(s, now, now.Add(time.Minute), time.Second, false)
	if b, known := effectivelyBounded(s, ticks); b || !known {
		t.Errorf("effectivelyBounded(periodic.Impulse) = %v, %v; want unbounded", b, known)
	}
	mixed := beam.Flatten(s, keys, beam.ParDo(s, tickName, ticks))
	if b, _ := effectivelyBounded(s, mixed); b {
		t.Error("a Flatten of a Write's results and a periodic impulse is bounded; want unbounded")
	}
	st := mustSettings(t, testConfig("bucket-name", "y"))
	if applies, why := barrierApplies(st, s, mixed); applies || !strings.Contains(why, "unbounded") {
		t.Errorf("barrierApplies(periodic) = %v, %q", applies, why)
	}
}

func init() { register.Function1x1(tickName) }

// tickName names a tick of the periodic impulse.
func tickName(b []byte) string { return fmt.Sprintf("tick-%x", b) }

func put(t *testing.T, c *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// everything reads every object under prefix, manifests and markers
// included, by its key relative to prefix.
func everything(t *testing.T, c *s3.Client, bucket, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, k := range s3test.Keys(t, c, bucket, prefix+"/") {
		out[strings.TrimPrefix(k, prefix+"/")] = s3test.Object(t, c, bucket, k)
	}
	return out
}

// TestDeletedMarkerBesideManifests: a folder of output version 2 whose
// settings marker was deleted still holds its manifests, which are
// written only after the marker: it is damaged, never a folder of an
// earlier release, so a run of output version 1 (or any other) is
// refused before any commit.
func TestDeletedMarkerBesideManifests(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(300, 61)
	if _, err := partitionRun(t, bucket, "out", in, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(ownkeys.SettingsKey("out"))}); err != nil {
		t.Fatal(err)
	}
	before := everything(t, c, bucket, "out")
	for _, v := range []int{1, 2} {
		_, err := partitionRun(t, bucket, "out", in, func(cfg *Config) { cfg.OutputVersion = v })
		if err == nil || !errcode.Has(errors.New(err.Error()), errcode.SettingsDamaged) || !strings.Contains(err.Error(), "is missing, though the partition manifest") {
			t.Errorf("output version %d over a folder whose marker was deleted: %v; want %s naming a manifest", v, err, errcode.SettingsDamaged.Token())
		}
		if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
			t.Errorf("output version %d: the refused run changed the folder: %v", v, keysOf(after))
		}
	}
	checkClean(t, c, bucket)
}
