package sink

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/internal/pack"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

func init() {
	register.Function1x1(countryOf)
	beam.RegisterType(reflect.TypeFor[order]())
}

type order struct {
	ID      int    `json:"id"`
	Country string `json:"country"`
	Note    string `json:"note"`
}

func countryOf(o order) string { return "country=" + o.Country }

func orders(n int, seed uint64) []order {
	r := rand.New(rand.NewPCG(seed, 1))
	countries := []string{"fr", "de", "jp", "br", "ca"}
	out := make([]order, n)
	for i := range out {
		out[i] = order{ID: i, Country: countries[r.IntN(len(countries))], Note: strings.Repeat("x", r.IntN(40))}
	}
	return out
}

// TestBatch100k writes 100,000 records over five destinations and four shards,
// with files rolling and the writer checkpointing, and reads everything back.
func TestBatch100k(t *testing.T) {
	bucket := srv.Bucket(t)
	in := orders(100_000, 1)
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, "out/orders")
	cfg.Format = "jsonl"
	cfg.Compression = "gzip"
	cfg.Destination = countryOf
	cfg.Shards = 4
	cfg.MaxFileBytes = 256 << 10
	cfg.CheckpointBytes = 64 << 10
	collect(t, s, Write(s, beam.CreateList(s, in), cfg))
	start := time.Now()
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("100,000 records in %v (%.0f records/s)", elapsed, 100_000/elapsed.Seconds())

	c := testClient()
	objs := s3test.Objects(t, c, bucket, "out/")
	name := regexp.MustCompile(`^out/orders/country=(fr|de|jp|br|ca)/global-pane-0-shard-0000[0-3]-of-00004-file-\d{5}\.jsonl\.gz$`)
	var got []string
	for k, b := range objs {
		if !name.MatchString(k) {
			t.Errorf("unexpected object %s", k)
		}
		for _, l := range lines(t, k, decompress(t, k, b)) {
			var o order
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			if want := countryOf(o); !strings.Contains(k, "/"+want+"/") {
				t.Errorf("record %d in %s, want destination %s", o.ID, k, want)
			}
			got = append(got, l)
		}
	}
	var want []string
	for _, o := range in {
		b, _ := json.Marshal(o)
		want = append(want, string(b))
	}
	sameMultiset(t, got, want)
	checkClean(t, c, bucket)

	// One result per object, describing it.
	res := results(t)
	seen := map[string]bool{}
	var records int64
	for _, r := range res {
		if seen[r.Key] {
			t.Errorf("result for %s twice", r.Key)
		}
		seen[r.Key] = true
		b, ok := objs[r.Key]
		if !ok {
			t.Errorf("result for missing object %s", r.Key)
			continue
		}
		if int64(len(b)) != r.Bytes {
			t.Errorf("%s: result says %d bytes, object has %d", r.Key, r.Bytes, len(b))
		}
		if n := int64(len(lines(t, r.Key, decompress(t, r.Key, b)))); n != r.Records {
			t.Errorf("%s: result says %d records, object has %d", r.Key, r.Records, n)
		}
		records += r.Records
	}
	if len(res) != len(objs) || records != int64(len(in)) {
		t.Errorf("%d results for %d objects, %d records for %d", len(res), len(objs), records, len(in))
	}
	m := counters(pr)
	t.Logf("%d files; metrics %v", len(objs), m)
	if m["files_committed"] != int64(len(objs)) || m["records_written"] != int64(len(in)) || m["persists"] == 0 {
		t.Errorf("metrics %v disagree with %d files of %d records, or no checkpoint was taken", m, len(objs), len(in))
	}
}

// TestBatchRefusesMalformedPack: a group holding a malformed pack fails
// the Batch stage with an error wrapping pack.ErrMalformed, before any
// batch is emitted; the records before it are not written.
func TestBatchRefusesMalformedPack(t *testing.T) {
	good := pack.Of([]byte("a\n"))
	for name, bad := range map[string][]byte{
		"other version": append([]byte{3}, good[1:]...),
		"a record cut":  good[:len(good)-1],
	} {
		fn := &batchFn{Shards: 4, MaxBatchBytes: MinMaxBatchBytes}
		emitted := 0
		err := fn.ProcessElement(t.Context(), beam.PaneInfo{}, window.GlobalWindow{}, shardKey(1, ""), sliceValues([][]byte{good, bad}), func(batch) { emitted++ })
		if !errors.Is(err, pack.ErrMalformed) || emitted != 0 {
			t.Fatalf("%s: Batch: %v and %d batches, want an error wrapping pack.ErrMalformed and none", name, err, emitted)
		}
	}
}
