package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/pack"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

func init() {
	register.Function1x2(badDestination)
}

func badDestination(s string) (string, error) {
	if strings.HasPrefix(s, "bad") {
		return "", errors.New("no destination for bad records")
	}
	return "../" + s, nil
}

func TestTracker(t *testing.T) {
	tr := newTracker(restriction{Start: 2, End: 6})
	if !tr.TryClaim(int64(2)) || !tr.TryClaim(int64(3)) {
		t.Fatal("claims in order must succeed")
	}
	if p, r, err := tr.TrySplit(0.5); r != nil || err != nil || !reflect.DeepEqual(p, restriction{Start: 2, End: 6}) {
		t.Fatalf("TrySplit(0.5) = %v, %v, %v; want a refusal", p, r, err)
	}
	if _, r, err := tr.TrySplit(0); r != nil || err != nil {
		t.Fatalf("TrySplit(0) without a checkpoint = %v, %v; want a refusal", r, err)
	}
	if tr.IsDone() {
		t.Fatal("done halfway")
	}
	if err := tr.arm(restriction{Start: 5, End: 6}); err == nil {
		t.Fatal("armed a residual that skips a record")
	}
	res := restriction{Start: 4, End: 6, FileIndex: 1}
	if err := tr.arm(res); err != nil {
		t.Fatal(err)
	}
	p, r, err := tr.TrySplit(0)
	if err != nil || !reflect.DeepEqual(p, restriction{Start: 2, End: 4}) || !reflect.DeepEqual(r, res) {
		t.Fatalf("checkpoint = %v, %v, %v", p, r, err)
	}
	if !tr.IsDone() || tr.TryClaim(int64(4)) {
		t.Fatal("the primary must be done after the checkpoint")
	}
	if done, rem := tr.GetProgress(); done != 2 || rem != 0 {
		t.Fatalf("progress %v, %v", done, rem)
	}

	tr = newTracker(restriction{Start: 0, End: 3})
	if tr.TryClaim(int64(1)) || tr.GetError() == nil || tr.IsDone() {
		t.Fatal("a claim out of order must fail the tracker")
	}
	tr = newTracker(restriction{Start: 0, End: 1})
	if !tr.TryClaim(int64(0)) || tr.TryClaim(int64(1)) || !tr.IsDone() || tr.GetError() != nil {
		t.Fatal("claiming past the end ends the restriction")
	}
}

func TestWindowName(t *testing.T) {
	at := func(s string) mtime.Time {
		tt, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return mtime.FromTime(tt)
	}
	cases := []struct {
		w    beam.Window
		want string
	}{
		{window.GlobalWindow{}, "global"},
		{window.IntervalWindow{Start: at("2024-06-01T10:00:00Z"), End: at("2024-06-01T11:00:00Z")}, "20240601T100000Z-20240601T110000Z"},
		{window.IntervalWindow{Start: at("2024-06-01T10:00:00.250Z"), End: at("2024-06-01T10:00:01Z")}, "20240601T100000.250Z-20240601T100001Z"},
	}
	for _, c := range cases {
		if got, err := windowName(c.w); err != nil || got != c.want {
			t.Errorf("windowName(%v) = %q, %v; want %q", c.w, got, err, c.want)
		}
	}
}

func TestFileKey(t *testing.T) {
	st, err := testConfig("bucket", "out/").settings()
	if err != nil {
		t.Fatal(err)
	}
	b := &batch{Destination: "country=fr", Window: "global", Pane: 0, Shard: 3, Shards: 16, SubBatches: 1}
	if got, want := fileKey(st.folder, ".jsonl.gz", b, 12), "out/country=fr/global-pane-0-shard-00003-of-00016-file-00012.jsonl.gz"; got != want {
		t.Errorf("fileKey = %q, want %q", got, want)
	}
	st.Prefix = ""
	b.Destination = ""
	if got, want := fileKey(st.folder, ".txt", b, 0), "global-pane-0-shard-00003-of-00016-file-00000.txt"; got != want {
		t.Errorf("fileKey = %q, want %q", got, want)
	}
	if err := checkKey(st.folder, ".s3once/staging/x.txt"); err == nil {
		t.Error("a key under the staging prefix was accepted")
	}
	if err := checkKey(st.folder, strings.Repeat("k", 1025)); err == nil {
		t.Error("a key over 1,024 bytes was accepted")
	}
}

// runFailing runs a pipeline that must fail with an error containing want.
func runFailing(t *testing.T, cfg Config, in []string, want string) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	Write(s, beam.CreateList(s, in), cfg)
	err := ptest.Run(p)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("pipeline error = %v; want one containing %q", err, want)
	}
}

// TestRuntimeErrors: data that breaks the configuration's limits fails the
// pipeline with a message that names the problem and the remedy.
func TestRuntimeErrors(t *testing.T) {
	bucket := srv.Bucket(t)
	big := make([]string, 300)
	for i := range big {
		big[i] = strings.Repeat("r", 90) + string(rune('a'+i%26))
	}
	t.Run("batch too skewed", func(t *testing.T) {
		cfg := testConfig(bucket, "big")
		cfg.Shards = 2
		cfg.MaxBatchBytes = 4 << 10
		same := slices.Repeat(big[:1], 100) // 9,200 bytes of one record
		runFailing(t, cfg, same, "the records are too skewed to split (many identical records, say); raise MaxBatchBytes")
	})
	t.Run("record too large", func(t *testing.T) {
		cfg := testConfig(bucket, "rec")
		cfg.MaxFileBytes = 1 << 10
		cfg.MaxBatchBytes = 1 << 10
		runFailing(t, cfg, []string{strings.Repeat("x", 2000)}, "a record of 2001 bytes exceeds MaxFileBytes (1024)")
	})
	t.Run("newline in text", func(t *testing.T) {
		runFailing(t, testConfig(bucket, "nl"), []string{"ok", "not\nok"}, "record holds a newline")
	})
	t.Run("bad destination", func(t *testing.T) {
		cfg := testConfig(bucket, "dest")
		cfg.Destination = badDestination
		runFailing(t, cfg, []string{"bad"}, "no destination for bad records")
		runFailing(t, cfg, []string{"fine"}, `".." segment`)
	})
	checkClean(t, testClient(), bucket)
}

func init() {
	register.Function2x1(windowDestination)
	format.Register("test-csv-header", format.CSV{Header: []string{"name", "count"}})
}

func windowDestination(w beam.Window, s string) string {
	name, _ := windowName(w)
	return "w=" + name + "/" + s[:1]
}

// TestEncodeDestination calls the encoder with a window-taking destination
// the way a worker does: decoded from its JSON.
func TestEncodeDestination(t *testing.T) {
	st, err := testConfig("bucket", "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	kind, err := destinationKind(windowDestination, reflect.TypeFor[string]())
	if err != nil || kind != destWindowElem {
		t.Fatalf("destinationKind = %d, %v", kind, err)
	}
	fn := newEncodeFn(st, kind, &beam.EncodedFunc{Fn: reflectx.MakeFunc(windowDestination)}, true)
	js, err := json.Marshal(fn)
	if err != nil {
		t.Fatal(err)
	}
	var worker encodeFn
	if err := json.Unmarshal(js, &worker); err != nil {
		t.Fatal(err)
	}
	if !worker.Pack {
		t.Fatalf("the worker's encoder lost Pack in %s", js)
	}
	if err := worker.Setup(); err != nil {
		t.Fatal(err)
	}
	packs := map[string][]byte{}
	toPacks := func(_ beam.EventTime, k, v []byte) { packs[string(k)] = append(packs[string(k)], v...) }
	in := []string{"apple", "avocado", "banana"}
	for _, s := range in {
		if err := worker.ProcessElement(context.Background(), window.GlobalWindow{}, mtime.ZeroTimestamp, s, toPacks); err != nil {
			t.Fatal(err)
		}
	}
	if len(packs) != 0 {
		t.Fatalf("%d packs emitted before the bundle's end, for three small records", len(packs))
	}
	worker.FinishBundle(context.Background(), toPacks)
	n := 0
	for k, p := range packs {
		shard, dest, err := parseShardKey([]byte(k))
		if err != nil || shard < 0 || shard >= st.Shards {
			t.Fatalf("key %q: shard %d, %v", k, shard, err)
		}
		u := pack.NewReader(sliceValues([][]byte{p}))
		var rec []byte
		for u.Next(&rec) {
			n++
			if want := "w=global/" + string(rec[:1]); dest != want {
				t.Errorf("record %q under destination %q, want %q", rec, dest, want)
			}
		}
		if err := u.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n != len(in) {
		t.Errorf("%d records in the packs, want %d", n, len(in))
	}
}

// TestCSVHeader checks that every file of a format with a header starts with
// it, and that the header counts as no record.
func TestCSVHeader(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	cf := testConfig(bucket, "csv")
	cf.Format = "test-csv-header"
	cf.Compression = "gzip"
	cf.MaxFileRecords = 7
	cf.CheckpointBytes = 1 << 10
	st, err := cf.settings()
	if err != nil {
		t.Fatal(err)
	}
	b := batch{Window: "global", Shards: 1, SubBatches: 1}
	for i := 0; i < 30; i++ {
		rec, err := (format.CSV{}).Append(nil, []string{fmt.Sprintf("n%02d", i), fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		b.Lines = append(b.Lines, rec)
	}
	r := &runner{t: t, s: st, client: c, rng: rand.New(rand.NewPCG(1, 1)), checkpointP: 0.5, crashP: 0.2}
	res := r.commitAll(r.run(b))
	objs := s3test.Objects(t, c, bucket, "csv/")
	if len(objs) != 5 {
		t.Fatalf("%d files, want 5 of at most 7 records", len(objs))
	}
	var n int64
	for k, v := range objs {
		ls := lines(t, k, decompress(t, k, v))
		if ls[0] != "name,count" || len(ls) > 8 {
			t.Errorf("%s: header %q, %d lines", k, ls[0], len(ls))
		}
		n += int64(len(ls) - 1)
	}
	var counted int64
	seen := map[string]bool{}
	for _, fr := range res {
		if !seen[fr.Key] {
			counted += fr.Records
			seen[fr.Key] = true
		}
	}
	if n != 30 || counted != 30 {
		t.Errorf("%d records in files, %d in results; want 30", n, counted)
	}
	sweep(t, c, bucket)
	checkClean(t, c, bucket)
}
