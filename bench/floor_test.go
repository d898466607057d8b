package bench

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn1x0[[]byte](&floorGenerateFn{})
	register.DoFn2x0[string, func(uint64, string)](&shuffleKeyFn{})
	register.DoFn2x0[uint64, func(*string) bool](&discardGroupFn{})
	register.Emitter2[uint64, string]()
	register.Iter1[string]()
}

// floorRecords and floorBytes count what the floor's generator consumed in
// this process (prism runs the pipeline in process): a floor that lost its
// records would be no floor.
var floorRecords, floorBytes atomic.Int64

// floorGenerateFn is generateFn whose records are consumed where they are
// made: it sums their bytes and emits nothing, so no record crosses a stage
// boundary. It is the least any pipeline that generates these records can
// cost on the runner.
type floorGenerateFn struct {
	Records int `json:"records"`
	Len     int `json:"len"`
}

func (f *floorGenerateFn) ProcessElement(_ []byte) {
	buf := make([]byte, f.Len)
	var n int64
	for i := range f.Records {
		s := string(record(buf, i)) // what generateFn hands the runner
		n += int64(len(s)) + 1
	}
	floorRecords.Add(int64(f.Records))
	floorBytes.Add(n)
}

// shuffleKeyFn keys each record by a hash of its bytes over floorShards
// keys, as a sink shards records.
type shuffleKeyFn struct{}

var shuffleSeed = maphash.MakeSeed()

const floorShards = sink.DefaultShards

func (shuffleKeyFn) ProcessElement(r string, emit func(uint64, string)) {
	emit(maphash.String(shuffleSeed, r)%floorShards, r)
}

// discardGroupFn reads a group and drops it, counting its records.
type discardGroupFn struct{}

var shuffled atomic.Int64

func (discardGroupFn) ProcessElement(_ uint64, rs func(*string) bool) {
	var r string
	var n int64
	for rs(&r) {
		n++
	}
	shuffled.Add(n)
}

// floorSides are the sides BenchmarkPipelineFloor runs in turns: the floor
// (records consumed where they are made), the naive shuffle (the records
// keyed by a hash, grouped by key and discarded: what any sink that shards
// must at least pay), the packed shuffle without and with a splittable
// DoFn after it (packed_test.go: what a sink that packs its records before
// its shuffle, as this one does, must at least pay, and that with its
// writer's stage boundary), and sink.Write without and with compression.
var floorSides = []string{"floor", "shuffle", "packed", "packed-sdf", "sink", "sink-gzip"}

// floorRatios are the throughput ratios BenchmarkPipelineFloor reports:
// {faster if above 1, the other}.
var floorRatios = [][2]string{
	{"sink", "floor"},
	{"sink", "shuffle"},
	{"sink-gzip", "floor"},
	{"sink-gzip", "shuffle"},
	{"shuffle", "floor"},
	{"packed", "floor"},
	{"packed-sdf", "floor"},
	{"sink", "packed-sdf"},
}

// BenchmarkPipelineFloor runs, on prism in this process, the same records
// through the floor, the naive and the packed shuffles and sink.Write (Compression "none",
// then "gzip") in turns: one operation is one pipeline of each side, in an
// order that rotates from operation to operation, as BenchmarkUploadInTurns
// does, so that the machine's drift lands on every side alike. The sink
// sides write DefaultShards shards to the local server; the others write
// nothing.
//
// Metrics, each the geometric mean over the operations of the ratio of two
// sides' records/s in that operation (above 1: the first is faster):
// sink/floor, sink/shuffle, sink-gzip/floor, sink-gzip/shuffle,
// shuffle/floor, packed/floor, packed-sdf/floor and sink/packed-sdf
// (floorRatios); and each side's own records/s.
func BenchmarkPipelineFloor(b *testing.B) {
	for _, records := range []int{100_000, 1_000_000} {
		b.Run("records="+strconv.Itoa(records), func(b *testing.B) {
			e := newEnv(b)
			total := int64(records) * (recordLen + 1)
			b.SetBytes(total * int64(len(floorSides)))
			run := func(side string, n int) time.Duration {
				p, s := beam.NewPipelineWithRoot()
				imp := beam.Impulse(s)
				prefix := fmt.Sprintf("floor/%s/%d", side, n)
				floorRecords.Store(0)
				floorBytes.Store(0)
				shuffled.Store(0)
				switch side {
				case "floor":
					beam.ParDo0(s, &floorGenerateFn{Records: records, Len: recordLen}, imp)
				case "shuffle":
					col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, imp)
					beam.ParDo0(s, discardGroupFn{}, beam.GroupByKey(s, beam.ParDo(s, shuffleKeyFn{}, col)))
				case "packed", "packed-sdf":
					col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, imp)
					packedShuffle(s, col, side)
				case "sink", "sink-gzip":
					col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, imp)
					cfg := sink.Config{
						Bucket: e.bucket, Prefix: prefix, Files: sink.Files{Compression: "none"}, Connection: sink.Connection{Endpoint: e.srv.Endpoint(), Region: s3test.Region, PathStyle: true,
							Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
					}
					if side == "sink-gzip" {
						cfg.Compression = "gzip"
					}
					sink.Write(s, col, cfg)
				}
				start := time.Now()
				if err := ptest.Run(p); err != nil {
					b.Fatalf("%s: %v", side, err)
				}
				took := time.Since(start)
				b.StopTimer()
				switch side {
				case "floor":
					if floorRecords.Load() != int64(records) || floorBytes.Load() != total {
						b.Fatalf("the floor consumed %d records of %d bytes, want %d of %d", floorRecords.Load(), floorBytes.Load(), records, total)
					}
				case "shuffle", "packed", "packed-sdf":
					if shuffled.Load() != int64(records) {
						b.Fatalf("the shuffle grouped %d records, want %d", shuffled.Load(), records)
					}
				case "sink":
					if got := e.prefixBytes(b, prefix+"/"); got != total {
						b.Fatalf("sink wrote %d bytes, want %d", got, total)
					}
				case "sink-gzip":
					if got := e.prefixBytes(b, prefix+"/"); got == 0 {
						b.Fatal("sink-gzip wrote nothing")
					}
				}
				e.deletePrefix(b, "")
				b.StartTimer()
				return took
			}
			// One untimed pipeline of each side first: the first pipeline of a
			// process pays for what later ones reuse (the runner's start, the
			// client's connections).
			for _, side := range floorSides {
				b.StopTimer()
				run(side, -1)
				b.StartTimer()
			}
			logs := make([]float64, len(floorRatios))
			secs := map[string]float64{}
			n := 0
			for b.Loop() {
				took := map[string]float64{}
				for i := range floorSides {
					side := floorSides[(i+n)%len(floorSides)]
					took[side] = run(side, n).Seconds()
					secs[side] += took[side]
				}
				for i, r := range floorRatios {
					logs[i] += math.Log(took[r[1]] / took[r[0]])
				}
				n++
			}
			for i, r := range floorRatios {
				b.ReportMetric(math.Exp(logs[i]/float64(n)), r[0]+"/"+r[1])
			}
			for _, side := range floorSides {
				b.ReportMetric(float64(records)*float64(n)/secs[side], side+"-records/s")
			}
		})
	}
}

// TestFloorSidesCount: the floor and the shuffles really handle every
// record (a benchmark whose floor dropped its records would flatter the
// sink), on a small input.
func TestFloorSidesCount(t *testing.T) {
	const records = 5000
	p, s := beam.NewPipelineWithRoot()
	imp := beam.Impulse(s)
	floorRecords.Store(0)
	floorBytes.Store(0)
	shuffled.Store(0)
	beam.ParDo0(s, &floorGenerateFn{Records: records, Len: recordLen}, imp)
	col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, imp)
	beam.ParDo0(s, discardGroupFn{}, beam.GroupByKey(s, beam.ParDo(s, shuffleKeyFn{}, col)))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	if floorRecords.Load() != records || floorBytes.Load() != records*(recordLen+1) || shuffled.Load() != records {
		t.Fatalf("floor %d records (%d bytes), shuffle %d records; want %d records (%d bytes) each", floorRecords.Load(), floorBytes.Load(), shuffled.Load(), records, records*(recordLen+1))
	}
	// The packed shuffles, on more records than one pack holds.
	for _, side := range []string{"packed", "packed-sdf"} {
		const records = 40_000
		p, s := beam.NewPipelineWithRoot()
		shuffled.Store(0)
		packedShuffle(s, beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, beam.Impulse(s)), side)
		if err := ptest.Run(p); err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		if shuffled.Load() != records {
			t.Fatalf("%s grouped %d records, want %d", side, shuffled.Load(), records)
		}
	}
}
