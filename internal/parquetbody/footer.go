package parquetbody

import (
	"bytes"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/filebody"
)

// summarize sums md, a footer written with schema, over its row groups:
// where each row group starts (its first page), and each column's sizes,
// counts and bounds. A column's bounds are in Parquet's PLAIN encoding of
// its physical type (a byte array's bytes without a length), compared in
// the order of its logical type; there are none for the file when some row
// group holding values records none, and none for a column of nulls only.
// A byte-array column's bounds are at most StatBytes long in output
// version 2: Min may be a prefix of the least value, and Max a cut value
// rounded up.
func summarize(md *format.FileMetaData, schema *parquet.Schema) filebody.Summary {
	var out filebody.Summary
	byPath := map[string]int{}
	unbounded := map[int]bool{}
	for _, rg := range md.RowGroups {
		if len(rg.Columns) > 0 {
			out.SplitOffsets = append(out.SplitOffsets, rowGroupStart(rg))
		}
		for _, cc := range rg.Columns {
			m := &cc.MetaData
			k := pathKey(m.PathInSchema)
			i, ok := byPath[k]
			if !ok {
				i = len(out.Columns)
				byPath[k] = i
				out.Columns = append(out.Columns, filebody.Column{Path: append([]string(nil), m.PathInSchema...)})
			}
			c := &out.Columns[i]
			c.Bytes += m.TotalCompressedSize
			c.Values += m.NumValues
			c.Nulls += m.Statistics.NullCount
			if m.NumValues == m.Statistics.NullCount {
				continue // nulls only: nothing to bound
			}
			lo, hi, ok := chunkBounds(m, schema)
			if !ok {
				unbounded[i] = true
				continue
			}
			if c.Min == nil || lo.typ.Compare(lo.v, lo.typ.Kind().Value(c.Min)) < 0 {
				c.Min = bytes.Clone(lo.raw)
			}
			if c.Max == nil || hi.typ.Compare(hi.v, hi.typ.Kind().Value(c.Max)) > 0 {
				c.Max = bytes.Clone(hi.raw)
			}
		}
	}
	for i := range out.Columns {
		c := &out.Columns[i]
		c.HasBounds = c.Min != nil && !unbounded[i]
		if !c.HasBounds {
			c.Min, c.Max = nil, nil
		}
	}
	return out
}

// rowGroupStart is the offset of a row group's first page.
func rowGroupStart(rg format.RowGroup) int64 {
	if rg.FileOffset > 0 {
		return rg.FileOffset
	}
	m := rg.Columns[0].MetaData
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < m.DataPageOffset {
		return m.DictionaryPageOffset
	}
	return m.DataPageOffset
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// statValue is one bound of a column chunk, decoded for comparison.
type statValue struct {
	typ parquet.Type
	raw []byte
	v   parquet.Value
}

// chunkBounds returns a chunk's min and max statistics, decoded in its
// column's type; ok is false when the chunk records none, or records
// bytes that are not a value of its type.
func chunkBounds(m *format.ColumnMetaData, schema *parquet.Schema) (lo, hi statValue, ok bool) {
	leaf, found := schema.Lookup(m.PathInSchema...)
	if !found || leaf.Node == nil || !leaf.Node.Leaf() {
		return lo, hi, false
	}
	typ := leaf.Node.Type()
	s := m.Statistics
	if s.MinValue == nil || s.MaxValue == nil {
		return lo, hi, false
	}
	if !plainOf(typ, s.MinValue) || !plainOf(typ, s.MaxValue) {
		return lo, hi, false
	}
	return statValue{typ, s.MinValue, typ.Kind().Value(s.MinValue)}, statValue{typ, s.MaxValue, typ.Kind().Value(s.MaxValue)}, true
}

// plainOf reports whether b has the length of a PLAIN value of typ's
// physical type, so that decoding it cannot fail.
func plainOf(typ parquet.Type, b []byte) bool {
	switch typ.Kind() {
	case parquet.Boolean:
		return len(b) == 1
	case parquet.Int32, parquet.Float:
		return len(b) == 4
	case parquet.Int64, parquet.Double:
		return len(b) == 8
	case parquet.Int96:
		return len(b) == 12
	case parquet.FixedLenByteArray:
		return len(b) == typ.Length()
	case parquet.ByteArray:
		return true
	}
	return false
}
