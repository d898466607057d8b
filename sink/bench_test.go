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
