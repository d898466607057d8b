package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/reflectx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/golden"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

func init() {
	register.Function1x1(goldenDestination)
	register.Function1x1(goldenOrderDestination)
}

// goldenDestination spreads the golden text records over three destinations.
func goldenDestination(s string) string { return "group=" + s[len(s)-2:len(s)-1] }

func goldenOrderDestination(o order) string { return "country=" + o.Country }

// goldenRecords are the golden test's elements: fixed, of many lengths, in
// an order that is not sorted (the sink sorts them), with duplicates.
func goldenRecords(format string) []any {
	countries := []string{"fr", "de", "jp"}
	var out []any
	for i := range 240 {
		n := (i * 7919) % 1000
		note := strings.Repeat(string(rune('a'+i%26)), i%17)
		switch format {
		case "text":
			out = append(out, fmt.Sprintf("record %03d %s %d", n, note, i%3))
		default:
			out = append(out, order{ID: n, Country: countries[i%3], Note: note})
		}
		if i%40 == 0 { // a duplicate: both copies are written
			out = append(out, out[len(out)-1])
		}
	}
	return out
}

// goldenCase is one cell of the grid of settings that change a file's bytes
// or names.
type goldenCase struct {
	name   string
	format string // "text" for strings, anything else for orders
	cfg    Config
	win    beam.Window   // nil means the global window
	pane   beam.PaneInfo // the pane the records come in
	dest   any           // Config.Destination
	elemT  reflect.Type  // the elements' type
	recs   func() []any  // the elements
}

func goldenCases() []goldenCase {
	var cases []goldenCase
	text := func() []any { return goldenRecords("text") }
	orders := func() []any { return goldenRecords("orders") }
	// Every format with every codec, rolling files at 2 KiB of records,
	// with a sync point (a new gzip member or zstd frame) every KiB.
	for _, format := range []string{"text", "jsonl", "csv"} {
		for _, comp := range []string{"none", "gzip", "zstd"} {
			gc := goldenCase{
				name:   format + "-" + comp,
				format: format,
				cfg:    Config{Files: Files{Format: format, Compression: comp, Shards: 2, MaxFileBytes: 2 << 10}, Tuning: Tuning{CheckpointBytes: 1 << 10}},
				elemT:  reflect.TypeFor[order](),
				recs:   orders,
			}
			if format == "text" {
				gc.elemT, gc.recs = reflect.TypeFor[string](), text
			}
			cases = append(cases, gc)
		}
	}
	return append(cases,
		// The defaults: 4 shards, one file per shard, a sync point every
		// MiB (past the records' end).
		goldenCase{name: "text-defaults", format: "text", cfg: Config{}, elemT: reflect.TypeFor[string](), recs: text},
		goldenCase{name: "jsonl-gzip-defaults", format: "jsonl", cfg: Config{Files: Files{Format: "jsonl", Compression: "gzip"}},
			elemT: reflect.TypeFor[order](), recs: orders},
		// Destinations, many shards, rolling by record count.
		goldenCase{name: "text-destinations", format: "text",
			cfg:  Config{Files: Files{Shards: 5, MaxFileRecords: 7, Compression: "gzip"}, Tuning: Tuning{CheckpointBytes: 1 << 10}},
			dest: goldenDestination, elemT: reflect.TypeFor[string](), recs: text},
		goldenCase{name: "jsonl-destinations", format: "jsonl",
			cfg:  Config{Files: Files{Format: "jsonl", Compression: "zstd", Shards: 3, MaxFileBytes: 1 << 10}, Tuning: Tuning{CheckpointBytes: 4 << 10}},
			dest: goldenOrderDestination, elemT: reflect.TypeFor[order](), recs: orders},
		// A shard larger than MaxBatchBytes, split into sub-batches.
		goldenCase{name: "text-sub-batches", format: "text",
			cfg:   Config{Files: Files{Shards: 1, Compression: "gzip"}, Tuning: Tuning{MaxBatchBytes: 1 << 10, CheckpointBytes: 1 << 10}},
			elemT: reflect.TypeFor[string](), recs: text},
		// A header in every file.
		goldenCase{name: "csv-header-gzip", format: "csv",
			cfg:   Config{Files: Files{Format: "test-csv-header", Compression: "gzip", Shards: 2, MaxFileRecords: 50}, Tuning: Tuning{CheckpointBytes: 1 << 10}},
			elemT: reflect.TypeFor[[]string](), recs: func() []any {
				var out []any
				for i, r := range goldenRecords("text") {
					out = append(out, []string{r.(string), fmt.Sprint(i % 9)})
				}
				return out
			}},
		// A window and a pane in the names.
		goldenCase{name: "text-window-pane", format: "text",
			cfg:  Config{Files: Files{Shards: 2, MaxFileBytes: 3 << 10}},
			win:  window.IntervalWindow{Start: mtime.FromMilliseconds(1717236000000), End: mtime.FromMilliseconds(1717236060500)},
			pane: beam.PaneInfo{Index: 3}, elemT: reflect.TypeFor[string](), recs: text},
	)
}

// TestOutputGolden writes fixed records through the sink's stages (Encode,
// a grouping, Batch, WriteFiles, the commit) for a grid of the settings that
// decide a file's bytes and names (each Format, each Compression, Shards,
// Destination, MaxFileBytes and MaxFileRecords rolling, sub-batches, sync
// points, windows and panes), and compares every file's key and bytes with
// the golden files, once per output version: version 1's under
// testdata/output/<case>/<key>, version 2's under
// testdata/output-v2/<case>/<key>.
//
// A file's bytes for given settings and output version must not change
// between s3once versions: a rerun after an upgrade would otherwise find its
// keys taken by other bytes and fail with committer.ErrKeyTaken. A failure
// here means a change would break reruns across versions. Regenerate the
// files only on purpose, with `go test -run TestOutputGolden -update
// ./sink/`, and say in the release notes that files written before the
// change cannot be rerun. Version 1's files never change: a change that
// needs other bytes belongs in a new output version.
//
// The S3 server is the in-memory one (internal/testkit/s3mem): the bytes are the
// sink's, and the test needs no server process.
func TestOutputGolden(t *testing.T) {
	for _, version := range []int{1, 2} {
		for _, gc := range goldenCases() {
			gc.cfg.OutputVersion = version
			t.Run(fmt.Sprintf("v%d/%s", version, gc.name), func(t *testing.T) {
				got := runGolden(t, gc)
				compareGolden(t, goldenDir(version, gc.name), got)
			})
		}
	}
}

// goldenDir is where the golden files of an output version's case are.
func goldenDir(version int, name string) string {
	if version == 1 {
		return filepath.Join("testdata", "output", name)
	}
	return filepath.Join("testdata", fmt.Sprintf("output-v%d", version), name)
}

// runGolden runs gc's records through the sink's DoFns over an in-memory S3
// and returns the objects written, by key.
func runGolden(t *testing.T, gc goldenCase) map[string][]byte {
	t.Helper()
	fake := s3mem.New(s3mem.Options{})
	bucket := fake.Bucket()
	client := fake.NewClient(s3mem.ClientOptions{MaxAttempts: 3})
	cfg := gc.cfg
	cfg.Bucket, cfg.Prefix, cfg.Destination = bucket, "out", gc.dest
	st, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	st.bindParquetRow(gc.elemT) // as Write does; nothing for other formats
	ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "golden"), "WriteFiles")
	win := gc.win
	if win == nil {
		win = window.GlobalWindow{}
	}

	// Encode.
	kind, err := destinationKind(gc.dest, gc.elemT)
	if err != nil {
		t.Fatal(err)
	}
	var dest *beam.EncodedFunc
	if gc.dest != nil {
		dest = &beam.EncodedFunc{Fn: reflectx.MakeFunc(gc.dest)}
	}
	_, global := win.(window.GlobalWindow)
	enc := newEncodeFn(st, kind, dest, global) // packed, as Write does, in the global window
	if err := enc.Setup(); err != nil {
		t.Fatal(err)
	}
	groups := map[string][][]byte{}
	toGroup := func(_ beam.EventTime, k, v []byte) { groups[string(k)] = append(groups[string(k)], v) }
	for _, r := range gc.recs() {
		if err := enc.ProcessElement(ctx, win, mtime.ZeroTimestamp, r, toGroup); err != nil {
			t.Fatal(err)
		}
	}
	enc.FinishBundle(ctx, toGroup)

	// Group and Batch: the packs come in reverse order, which the sort
	// undoes.
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var batches []batch
	bfn := newBatchFn(st)
	for _, k := range keys {
		vals := slices.Clone(groups[k])
		slices.Reverse(vals)
		next := func(v *[]byte) bool {
			if len(vals) == 0 {
				return false
			}
			*v, vals = vals[0], vals[1:]
			return true
		}
		if err := bfn.ProcessElement(ctx, gc.pane, win, []byte(k), next, func(b batch) {
			batches = append(batches, roundTrip(t, b, encodeBatch, decodeBatch))
		}); err != nil {
			t.Fatal(err)
		}
	}

	// WriteFiles, checkpointing where the settings say, each residual
	// resumed on a new DoFn; then the commit.
	cm, err := committer.New(client, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pending []pendingFile
	for _, b := range batches {
		rest := roundTrip(t, (&writeFilesFn{S: st.writerSettings}).CreateInitialRestriction(b), encodeRestriction, decodeRestriction)
		for {
			fn := &writeFilesFn{S: st.writerSettings, committer: cm}
			if err := fn.init(client); err != nil {
				t.Fatal(err)
			}
			rt := fn.CreateTracker(rest)
			pc, err := fn.ProcessElement(ctx, rt, b, func(p pendingFile) { pending = append(pending, p) })
			if err != nil {
				t.Fatal(err)
			}
			if !pc.ShouldResume() {
				break
			}
			_, res, err := rt.TrySplit(0)
			if err != nil || res == nil {
				t.Fatalf("checkpoint split: %v, %v", res, err)
			}
			rest = roundTrip(t, res.(restriction), encodeRestriction, decodeRestriction)
		}
	}
	for _, p := range pending {
		cr, err := coder.DecodeCommitToken(p.Commit)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cm.CommitAfterRecovery(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	objs := readAll(t, client, bucket)
	if len(objs) != len(pending) {
		t.Fatalf("%d objects for %d files", len(objs), len(pending))
	}
	for _, p := range pending {
		if _, ok := objs[p.Result.Key]; !ok {
			t.Errorf("result names %s, which was not written", p.Result.Key)
		}
	}
	return objs
}

// readAll returns every object of the bucket, by key.
func readAll(t *testing.T, c *s3.Client, bucket string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if ownkeys.IsSettingsAnywhere(aws.ToString(o.Key)) {
				continue // the folders' settings markers: settings_marker_test.go
			}
			res, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[*o.Key] = b
		}
	}
	return out
}

// compareGolden compares got (objects by key) with the files under dir, or
// rewrites dir under -update.
func compareGolden(t *testing.T, dir string, got map[string][]byte) {
	t.Helper()
	if *golden.Update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for k, b := range got {
			p := filepath.Join(dir, filepath.FromSlash(k))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		want[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatalf("%v (run with -update to create the golden files)", err)
	}
	for k, b := range got {
		w, ok := want[k]
		switch {
		case !ok:
			t.Errorf("the sink wrote %s, which %s does not hold: a file name changed", k, dir)
		case !bytes.Equal(b, w):
			t.Errorf("%s: %d bytes differ from the %d of %s: a file's bytes changed", k, len(b), len(w), filepath.Join(dir, k))
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("the sink did not write %s, which %s holds: a file name changed", k, dir)
		}
	}
	if len(got) == 0 {
		t.Error("no file written")
	}
}
