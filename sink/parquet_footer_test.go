package sink

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/parquetbody"
)

// TestFooterSummary: the summary the writer keeps of a file's footer
// agrees with the records themselves, summed over many row groups, in both
// output versions: value and null counts, and bounds compared in each
// column's own order (signed, floating point, bytewise).
func TestFooterSummary(t *testing.T) {
	events := pqEvents(41, 3) // row groups of 2 records: 21 of them
	for i := range events {
		if i%5 != 0 {
			events[i].Opt = nil
		}
	}
	for _, version := range []int{1, 2} {
		sum, file := writeParquet(t, version, 2, events)
		if len(sum.RowGroupOffsets) != 21 || sum.RowGroupOffsets[0] != 4 || !slices.IsSorted(sum.RowGroupOffsets) {
			t.Errorf("v%d: row group offsets %v; want 21, the first at 4, in order", version, sum.RowGroupOffsets)
		}
		col := map[string]ColumnStats{}
		var total int64
		for _, c := range sum.Columns {
			col[strings.Join(c.Path, ".")] = c
			total += c.Bytes
			if c.Bytes <= 0 {
				t.Errorf("v%d: column %v: %d bytes", version, c.Path, c.Bytes)
			}
		}
		if total >= int64(len(file)) {
			t.Errorf("v%d: the columns take %d bytes of a file of %d", version, total, len(file))
		}

		var ids, smalls, us, opts []int64
		var names []string
		var scores []float64
		var seenNil int64
		for _, e := range events {
			ids = append(ids, e.ID)
			smalls = append(smalls, int64(e.Small))
			us = append(us, int64(e.U))
			names = append(names, e.Name)
			scores = append(scores, e.Score)
			if e.Opt != nil {
				opts = append(opts, int64(*e.Opt))
			}
			if e.Seen == nil {
				seenNil++
			}
		}
		le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
		le32 := func(v int64) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
		f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
		for _, tc := range []struct {
			path     string
			min, max []byte
			nulls    int64
		}{
			{"ID", le64(slices.Min(ids)), le64(slices.Max(ids)), 0},
			{"Small", le32(slices.Min(smalls)), le32(slices.Max(smalls)), 0}, // signed order
			{"U", le32(slices.Min(us)), le32(slices.Max(us)), 0},
			{"Name", []byte(slices.Min(names)), []byte(slices.Max(names)), 0},
			{"Score", f64(slices.Min(scores)), f64(slices.Max(scores)), 0},
			{"Opt", le32(slices.Min(opts)), le32(slices.Max(opts)), int64(len(events) - len(opts))},
		} {
			c, ok := col[tc.path]
			switch {
			case !ok:
				t.Errorf("v%d: no column %s in %v", version, tc.path, sum.Columns)
			case !c.HasBounds || !bytes.Equal(c.Min, tc.min) || !bytes.Equal(c.Max, tc.max):
				t.Errorf("v%d: %s: bounds [%x, %x] (%v); want [%x, %x]", version, tc.path, c.Min, c.Max, c.HasBounds, tc.min, tc.max)
			case c.Values != int64(len(events)) || c.Nulls != tc.nulls:
				t.Errorf("v%d: %s: %d values, %d nulls; want %d, %d", version, tc.path, c.Values, c.Nulls, len(events), tc.nulls)
			}
		}
		if c := col["Seen"]; c.Nulls != seenNil {
			t.Errorf("v%d: Seen: %d nulls; want %d", version, c.Nulls, seenNil)
		}
	}
}

// TestFooterSummaryLongAndNull: a long string's bounds are the footer's,
// bounded in output version 2 (still bounds of the values), and a column
// of nulls only has none.
func TestFooterSummaryLongAndNull(t *testing.T) {
	events := pqEvents(6, 4)
	long := strings.Repeat("z", 300)
	events[2].Name = long
	for i := range events {
		events[i].Opt = nil
	}
	sum, _ := writeParquet(t, 2, 4, events)
	for _, c := range sum.Columns {
		switch strings.Join(c.Path, ".") {
		case "Name":
			if !c.HasBounds || len(c.Max) > parquetbody.StatBytes || len(c.Min) > parquetbody.StatBytes {
				t.Errorf("Name: bounds [%q, %q] (%v); want at most %d bytes each", c.Min, c.Max, c.HasBounds, parquetbody.StatBytes)
			}
			for _, e := range events {
				if e.Name < string(c.Min) || e.Name > string(c.Max) {
					t.Errorf("Name: bounds [%q, %q] do not hold %q", c.Min, c.Max, e.Name)
				}
			}
		case "Opt":
			if c.HasBounds || c.Min != nil || c.Nulls != 6 || c.Values != 6 {
				t.Errorf("Opt, nulls only: %+v; want 6 values, 6 nulls, no bounds", c)
			}
		}
	}
}
