package sink

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/recoverable"
)

// BenchmarkParquetOpenFileMemory measures what an open Parquet file holds in
// memory besides its stream's part buffers: the encoder with one row group
// filled to just under RowGroupBytes, the most it ever holds, since the row
// group's bytes leave for the stream when it ends. It opens openFiles
// encoders at once, fills each, and takes the live heap after a garbage
// collection, less the live heap before the first was opened, per file.
//
// Metrics: MiB/open-file (that live heap per file), of-row-group (it over
// RowGroupBytes: the encoder keeps the row group's pages compressed, so this
// is about the compression ratio of the records' columns), and
// with-part-buffers-MiB (MiB/open-file plus the stream's part buffers at the
// defaults, PartSize x (Concurrency + 1): what one open file costs a writer).
//
// Run it with
//
//	go test -run '^$' -bench BenchmarkParquetOpenFileMemory -benchtime 1x ./sink/
func BenchmarkParquetOpenFileMemory(b *testing.B) {
	const openFiles = 2
	// Distinct records, cycled: far more than a page, so the pages compress
	// as records of this shape do.
	var rows [][]byte
	for _, e := range pqEvents(50_000, 3) {
		rows = append(rows, pqEncode(b, e))
	}
	partBuffers := float64(recoverable.DefaultPartSize * (recoverable.DefaultConcurrency + 1))
	for _, rg := range []int64{8 << 20, DefaultRowGroupBytes} {
		b.Run("row-group="+strconv.FormatInt(rg>>20, 10)+"MiB", func(b *testing.B) {
			s := pqSettings(b, "bucket-a", "memory", func(c *Config) { c.Parquet.RowGroupBytes = rg })
			kind, err := s.bodyKind(parquetFormat{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			var perFile float64
			n := 0
			for b.Loop() {
				n++
				before := liveHeap()
				files := make([]filebody.Body, openFiles)
				for i := range files {
					var out countingWriter
					if files[i], err = kind.Open(&out, func(what string, err error) error { return err }); err != nil {
						b.Fatal(err)
					}
					var held int64 // record bytes in the open row group
					for j := 0; ; j++ {
						row := rows[j%len(rows)]
						if held+int64(len(row)) >= rg {
							break // the next record would end the row group
						}
						if err := files[i].Write(row); err != nil {
							b.Fatal(err)
						}
						held += int64(len(row))
					}
					if out > 4 { // at most the magic bytes reached the output
						b.Fatalf("%d bytes left an open row group", out)
					}
				}
				after := liveHeap()
				runtime.KeepAlive(files)
				perFile += (float64(after) - float64(before)) / openFiles
			}
			perFile /= float64(n)
			b.ReportMetric(perFile/(1<<20), "MiB/open-file")
			b.ReportMetric(perFile/float64(rg), "of-row-group")
			b.ReportMetric((perFile+partBuffers)/(1<<20), "with-part-buffers-MiB")
		})
	}
}

// countingWriter counts the bytes written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
