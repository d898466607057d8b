package parquetbody

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/s3once/s3once/internal/statbound"
)

// StatBytes bounds, in output version 2, the min and max statistics
// of a byte-array column chunk in the footer. A value that is a column's
// min or max is otherwise stored whole: one 1 MiB string made a footer of
// over a megabyte. The page index's bounds are truncated by parquet-go
// itself, to 16 bytes.
const StatBytes = 64

// byteArrayColumns lists the paths of schema's byte-array leaf columns
// (strings and []byte), whose page statistics output version 2 leaves out
// (parquet.SkipPageStatistics): pages are pruned by the page index, whose
// bounds are truncated, and whole values in page headers would add up to
// twice a long value per page.
func byteArrayColumns(schema *parquet.Schema) [][]string {
	var out [][]string
	for _, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		if ok && leaf.Node.Type().Kind() == parquet.ByteArray {
			out = append(out, path)
		}
	}
	return out
}

// readFooter decodes the footer at the end of tail, the bytes that
// parquet-go wrote when the file was closed (the last row group, the page
// index, the footer, its length and the magic). start is where the footer
// begins in tail.
func readFooter(tail []byte) (start int, md *format.FileMetaData, err error) {
	const magic = "PAR1"
	if len(tail) < 8 || string(tail[len(tail)-4:]) != magic {
		return 0, nil, errors.New("the file does not end with the Parquet magic")
	}
	n := int(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n > len(tail)-8 {
		return 0, nil, fmt.Errorf("a footer of %d bytes in the last %d bytes of the file", n, len(tail))
	}
	start = len(tail) - 8 - n
	md = new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), tail[start:len(tail)-8], md); err != nil {
		return 0, nil, fmt.Errorf("decode the footer: %w", err)
	}
	return start, md, nil
}

// boundFooterStats rewrites the footer at the end of tail (readFooter) so
// that no byte-array column chunk's min or max statistic is longer than
// limit bytes: a min is cut to a prefix, a max cut and rounded up (package
// statbound), and where no max of at most limit bytes bounds the values,
// both are dropped. Everything before the footer keeps its bytes and
// offsets; tail comes back unchanged when no statistic is over the limit.
// It also returns the footer as it now is.
func boundFooterStats(tail []byte, limit int) ([]byte, *format.FileMetaData, error) {
	start, md, err := readFooter(tail)
	if err != nil {
		return nil, nil, err
	}
	changed := false
	for i := range md.RowGroups {
		for j := range md.RowGroups[i].Columns {
			m := &md.RowGroups[i].Columns[j].MetaData
			if m.Type != format.ByteArray {
				continue
			}
			if boundStats(&m.Statistics, limit) {
				changed = true
			}
		}
	}
	if !changed {
		return tail, md, nil
	}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), md)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the footer: %w", err)
	}
	out := make([]byte, 0, start+len(footer)+8)
	out = append(out, tail[:start]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...), md, nil
}

// boundStats bounds s's values to limit bytes and reports whether it
// changed anything.
func boundStats(s *format.Statistics, limit int) bool {
	over := func(b []byte) bool { return len(b) > limit }
	if !over(s.MinValue) && !over(s.MaxValue) && !over(s.Min) && !over(s.Max) {
		return false
	}
	maxV, ok := statbound.Upper(s.MaxValue, limit)
	if !ok {
		s.MinValue, s.MaxValue, s.Min, s.Max = nil, nil, nil, nil
		return true
	}
	s.MinValue, s.MaxValue = statbound.Lower(s.MinValue, limit), maxV
	// The deprecated fields (signed order) are written by parquet-go only
	// when asked; left out here where they would be long.
	if over(s.Min) || over(s.Max) {
		s.Min, s.Max = nil, nil
	}
	return true
}
