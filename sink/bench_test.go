package sink

import (
	"bytes"
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
