package sink

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// batchRow is batch without its registered coder: Beam encodes it with its
// schema (row) coder. BenchmarkBatchCoder compares the two. Defined on batch,
// it keeps batch's fields whatever they become.
type batchRow batch

func init() { beam.RegisterType(reflect.TypeFor[batchRow]()) }

// BenchmarkBatchCoder encodes and decodes a 4 MiB batch of 50,000 records
// through Beam's element coders, as a runner moves it between stages.
func BenchmarkBatchCoder(b *testing.B) {
	src := randomBatch(1, 50_000, 160)
	var size int64
	for _, l := range src.Lines {
		size += int64(len(l))
	}
	run := func(b *testing.B, t reflect.Type, v any) {
		enc, dec := beam.NewElementEncoder(t), beam.NewElementDecoder(t)
		var buf bytes.Buffer
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(v, &buf); err != nil {
				b.Fatal(err)
			}
			if _, err := dec.Decode(&buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("custom", func(b *testing.B) { run(b, reflect.TypeFor[batch](), src) })
	b.Run("schema", func(b *testing.B) {
		run(b, reflect.TypeFor[batchRow](), batchRow(src))
	})
}

// BenchmarkBatchEncoding encodes and decodes batches with the batch codec
// alone (no Beam coder around it), at 4 MiB and 64 MiB (the default
// MaxBatchBytes): the cost a batch pays each time it crosses a stage.
func BenchmarkBatchEncoding(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
	}{{"4MiB", 50_000}, {"64MiB", 800_000}} {
		src := randomBatch(1, c.n, 160)
		var size int64
		for _, l := range src.Lines {
			size += int64(len(l))
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				enc, err := encodeBatch(src)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := decodeBatch(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBatchCodec prices what a batch costs to cross to the writer: the
// encoding Batch hands the runner and the writer's decoding of it (held,
// then its records), for a 16 MiB batch of records that compress and of
// records that do not, as version 3 (plain) and version 4 (compressed, what
// encodeBatch writes). encoded/raw is the encoding's size over version 3's.
func BenchmarkBatchCodec(b *testing.B) {
	for name, rec := range benchRecordShapes(7) {
		bt := batch{Destination: "d", Window: "global", Shards: 1, SubBatches: 1}
		for i := 0; recordsSectionLen(bt.Lines) < 16<<20; i++ {
			bt.Lines = append(bt.Lines, rec(i))
		}
		plain, err := encodeBatchVersion(bt, batchPlain)
		if err != nil {
			b.Fatal(err)
		}
		for _, version := range []byte{batchPlain, batchCompressed} {
			b.Run(fmt.Sprintf("%s/version=%d", name, version), func(b *testing.B) {
				b.SetBytes(recordBytes(bt.Lines))
				var enc []byte
				for b.Loop() {
					if enc, err = encodeBatchVersion(bt, version); err != nil {
						b.Fatal(err)
					}
					held, err := decodeHeldBatch(enc)
					if err != nil {
						b.Fatal(err)
					}
					if err := held.decodeRecords(); err != nil || len(held.Lines) != len(bt.Lines) {
						b.Fatalf("%d records (%v), want %d", len(held.Lines), err, len(bt.Lines))
					}
				}
				b.ReportMetric(float64(len(enc))/float64(len(plain)), "encoded/raw")
			})
		}
	}
}

// benchRecordShapes makes the i-th record of two shapes: numbered CSV rows,
// which compress, and 100 random bytes from a generator seeded with seed,
// which do not.
func benchRecordShapes(seed uint64) map[string]func(i int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	return map[string]func(i int) []byte{
		"records=csv": func(i int) []byte { return fmt.Appendf(nil, "%08d,user%05d,%s,ok\n", i, i%20000, "2026-12-05") },
		"records=random": func(int) []byte {
			r := make([]byte, 100)
			for j := range r {
				r[j] = byte(rng.Uint32())
			}
			return r
		},
	}
}
