package sink

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/parquetbody"
)

// encodeParquet writes events as one Parquet file of the output version
// through the writer's encoder, and returns the file.
func encodeParquet(t testing.TB, version int, events []pqEvent) []byte {
	t.Helper()
	_, b := writeParquet(t, version, 2, events)
	return b
}

// writeParquet encodes events as one file of output version version, in
// row groups of rowGroup records, through the writer's body of the
// settings' Parquet files, and returns the file's footer summary and bytes.
func writeParquet(t testing.TB, version int, rowGroup int64, events []pqEvent) (ParquetFooter, []byte) {
	t.Helper()
	s := pqSettings(t, "bucket-a", "stats", func(c *Config) { c.OutputVersion = version; c.Parquet.RowGroupRecords = rowGroup })
	kind, err := s.bodyKind(parquetFormat{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	body, err := kind.Open(&out, func(what string, err error) error { return fmt.Errorf("%s: %w", what, err) })
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range pqBatch(t, events).Lines {
		if err := body.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := body.Finish(); err != nil {
		t.Fatal(err)
	}
	return parquetFooter(body.Summary()), out.Bytes()
}

// footerOf returns a file's footer length and its decoded metadata.
func footerOf(t *testing.T, file []byte) (int, *format.FileMetaData) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	return int(binary.LittleEndian.Uint32(file[len(file)-8:])), pf.Metadata()
}

// TestParquetStatsBounded writes records whose strings and byte slices are
// 1 MiB long: in output version 2 the footer stays small, every byte-array
// chunk statistic is at most parquetbody.StatBytes long and still bounds the
// chunk's values, and the file is megabytes smaller, its page headers
// holding no byte-array statistics; version 1 keeps the whole values, as
// its files always did.
func TestParquetStatsBounded(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	events := pqEvents(6, 5)
	events[0].Name, events[1].Name = long('m', 1<<20), "é"+long('z', 1<<20) // the max's first bytes
	events[2].Blob, events[3].Blob = []byte(long(0xff, 1<<20)), []byte(long(0x01, 1<<20))
	events[4].Name = long('a', 1<<20)
	sorted := sortedEvents(t, events)

	v1, v2 := encodeParquet(t, 1, events), encodeParquet(t, 2, events)
	n1, _ := footerOf(t, v1)
	n2, md := footerOf(t, v2)
	t.Logf("footer: version 1 %d bytes, version 2 %d bytes; files %d and %d bytes", n1, n2, len(v1), len(v2))
	if n1 < 1<<20 {
		t.Errorf("version 1's footer is %d bytes; the test wants the long values in it", n1)
	}
	if n2 > 16<<10 {
		t.Errorf("version 2's footer is %d bytes, want at most 16 KiB", n2)
	}
	if len(v2) >= len(v1)-(2<<20) {
		t.Errorf("version 2's file is %d bytes, version 1's %d: the page statistics of long values should be gone", len(v2), len(v1))
	}
	checkParquetFile(t, v2, sorted, 3, 2)

	// Every byte-array chunk's bounds: short, and bounding its values.
	first := 0
	for g, rg := range md.RowGroups {
		rows := sorted[first : first+int(rg.NumRows)]
		first += int(rg.NumRows)
		for _, cc := range rg.Columns {
			m := cc.MetaData
			if m.Type != format.ByteArray {
				continue
			}
			st := m.Statistics
			if len(st.MinValue) > parquetbody.StatBytes || len(st.MaxValue) > parquetbody.StatBytes {
				t.Errorf("row group %d, %v: statistics of %d and %d bytes", g, m.PathInSchema, len(st.MinValue), len(st.MaxValue))
			}
			var values [][]byte
			for _, e := range rows {
				switch strings.Join(m.PathInSchema, ".") {
				case "Name":
					values = append(values, []byte(e.Name))
				case "Blob":
					if e.Blob != nil {
						values = append(values, e.Blob)
					}
				}
			}
			if len(values) > 0 && (st.MinValue == nil || st.MaxValue == nil) {
				if g == 1 && strings.Join(m.PathInSchema, ".") == "Blob" {
					continue // all 0xff: no short max bounds it, so there are none
				}
				t.Errorf("row group %d, %v: no statistics", g, m.PathInSchema)
			}
			for _, v := range values {
				if st.MinValue != nil && (bytes.Compare(st.MinValue, v) > 0 || bytes.Compare(st.MaxValue, v) < 0) {
					t.Errorf("row group %d, %v: [%.20q, %.20q] does not bound %.20q", g, m.PathInSchema, st.MinValue, st.MaxValue, v)
				}
			}
			if strings.Join(m.PathInSchema, ".") == "Name" && (!utf8.Valid(st.MinValue) || !utf8.Valid(st.MaxValue)) {
				t.Errorf("row group %d: Name statistics are not UTF-8: %q, %q", g, st.MinValue, st.MaxValue)
			}
		}
	}
	// The page index keeps its bounds, truncated to 16 bytes.
	pf, err := parquet.OpenFile(bytes.NewReader(v2), int64(len(v2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range pf.RowGroups() {
		for i, cc := range rg.ColumnChunks() {
			if cc.Type().Kind() != parquet.ByteArray {
				continue
			}
			ci, err := cc.ColumnIndex()
			if err != nil {
				t.Fatalf("column %d: page index: %v", i, err)
			}
			for p := 0; p < ci.NumPages(); p++ {
				if n := len(ci.MinValue(p).ByteArray()); n > 16 {
					t.Errorf("column %d, page %d: page index bound of %d bytes", i, p, n)
				}
			}
		}
	}
}
