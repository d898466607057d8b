package sink

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pqGoldenEvents are the Parquet golden test's records: fixed by arithmetic
// alone (no random generator, whose sequence a Go release may change), with
// every kind of field pqEvent has: nested structs, slices of scalars and of
// structs, pointers both nil and set, times to the nanosecond, and a few
// duplicates.
func pqGoldenEvents() []pqEvent {
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	countries := []string{"fr", "de", "jp", "br", "ca"}
	var out []pqEvent
	for i := range 300 {
		n := (i * 7919) % 1000
		e := pqEvent{
			ID:     int64(n) - 500,
			Name:   fmt.Sprintf("event-%03d-%s", n, strings.Repeat("x", i%23)),
			Score:  float64(n)*1.25 - 400,
			Ratio:  float32(i%17) / 16,
			At:     base.Add(time.Duration(n)*time.Minute + time.Duration(i)*time.Nanosecond),
			Nested: pqInner{Country: countries[i%len(countries)], Zip: int32(10000 + n*37%90000)},
			Flag:   i%3 == 0,
			Small:  int8(n%256 - 128),
			U:      uint16(n * 61),
			Note:   "not written",
		}
		if i%3 != 0 {
			s := e.At.Add(-time.Duration(i) * time.Second)
			e.Seen = &s
		}
		for j := range i % 4 {
			e.Tags = append(e.Tags, fmt.Sprintf("t%d", (n+j)%10))
		}
		if i%2 == 0 {
			e.Blob = []byte{byte(i), 0, byte(n)}
		}
		if i%5 != 0 {
			v := int32(n*n) - 250000
			e.Opt = &v
		}
		for j := range i % 3 {
			e.Items = append(e.Items, pqItem{SKU: fmt.Sprintf("sku-%d", (n+j)%50), Qty: uint32(j + 1)})
		}
		out = append(out, e)
		if i%60 == 0 { // a duplicate: both copies are written
			out = append(out, e)
		}
	}
	return out
}

// TestParquetGolden writes fixed records as Parquet through the sink's
// stages, as TestOutputGolden does for the other formats (the same stages,
// checkpoints every KiB resumed on new DoFns, so each resume re-encodes the
// file's records), and compares the file's key and bytes with
// testdata/output/<case>/ for output version 1 and testdata/output-v2/<case>/
// for version 2. Each case makes several row groups, one by
// RowGroupRecords, one by RowGroupBytes. It then reads the golden file with
// the independent reader (xitongsys/parquet-go): every record field by field,
// the footer's row groups and row counts, the statistics.
//
// A file's bytes for given settings must not change between s3once versions
// (a rerun after an upgrade would find its key taken by other bytes): a new
// parquet-go version that encodes differently fails here. Regenerate only on
// purpose, with `go test ./sink/ -run TestParquetGolden -update`, change
// the created_by string (internal/parquetbody) with it, and say in the release notes that Parquet files
// written before cannot be rerun.
func TestParquetGolden(t *testing.T) {
	events := pqGoldenEvents()
	recs := func() []any {
		out := make([]any, len(events))
		for i, e := range events {
			out[i] = e
		}
		return out
	}
	want := sortedEvents(t, events)
	var lines [][]byte
	for _, e := range want {
		lines = append(lines, pqEncode(t, e))
	}
	for _, version := range []int{1, 2} {
		for _, tc := range []struct {
			gc        goldenCase
			rowGroups int
		}{
			{goldenCase{name: "parquet-snappy-records",
				cfg: Config{Files: Files{Format: "parquet", Shards: 1, Parquet: ParquetOptions{RowGroupRecords: 64}}, Tuning: Tuning{CheckpointBytes: 1 << 10}}},
				(len(events) + 63) / 64},
			{goldenCase{name: "parquet-zstd-bytes",
				cfg: Config{Files: Files{Format: "parquet", Shards: 1, Parquet: ParquetOptions{Compression: "zstd", RowGroupBytes: 8 << 10}}, Tuning: Tuning{CheckpointBytes: 1 << 10}}},
				pqGroupsByBytes(lines, 8<<10)},
		} {
			t.Run(fmt.Sprintf("v%d/%s", version, tc.gc.name), func(t *testing.T) {
				gc := tc.gc
				gc.format, gc.elemT, gc.recs = "parquet", reflect.TypeFor[pqEvent](), recs
				gc.cfg.OutputVersion = version
				dir := goldenDir(version, gc.name)
				got := runGolden(t, gc)
				if len(got) != 1 {
					t.Fatalf("%d files, want 1", len(got))
				}
				compareGolden(t, dir, got)
				if tc.rowGroups < 3 {
					t.Fatalf("the case makes %d row groups; it wants several", tc.rowGroups)
				}
				for k := range got {
					file := readGoldenFile(t, dir, k)
					checkParquetFile(t, file, want, tc.rowGroups, version)
				}
			})
		}
	}
}

// readGoldenFile reads the golden copy of key under dir.
func readGoldenFile(t *testing.T, dir, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
