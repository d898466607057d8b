package sink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// parquetStatBytes bounds, in output version 2, the min and max statistics
// of a byte-array column chunk in the footer. A value that is a column's
// min or max is otherwise stored whole: one 1 MiB string made a footer of
// over a megabyte. The page index's bounds are truncated by parquet-go
// itself, to 16 bytes.
const parquetStatBytes = 64

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

// boundFooterStats rewrites the footer at the end of tail, the bytes that
// parquet-go wrote when the file was closed (the last row group, the page
// index, the footer, its length and the magic), so that no byte-array
// column chunk's min or max statistic is longer than limit bytes: a min is
// cut to a prefix, a max cut and rounded up (see boundMin, boundMax), and
// where no max of at most limit bytes bounds the values, both are dropped.
// Everything before the footer keeps its bytes and offsets; tail comes back
// unchanged when no statistic is over the limit.
func boundFooterStats(tail []byte, limit int) ([]byte, error) {
	const magic = "PAR1"
	if len(tail) < 8 || string(tail[len(tail)-4:]) != magic {
		return nil, errors.New("the file does not end with the Parquet magic")
	}
	n := int(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if n > len(tail)-8 {
		return nil, fmt.Errorf("a footer of %d bytes in the last %d bytes of the file", n, len(tail))
	}
	start := len(tail) - 8 - n
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), tail[start:len(tail)-8], &md); err != nil {
		return nil, fmt.Errorf("decode the footer: %w", err)
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
		return tail, nil
	}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		return nil, fmt.Errorf("encode the footer: %w", err)
	}
	out := make([]byte, 0, start+len(footer)+8)
	out = append(out, tail[:start]...)
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, magic...), nil
}

// boundStats bounds s's values to limit bytes and reports whether it
// changed anything.
func boundStats(s *format.Statistics, limit int) bool {
	over := func(b []byte) bool { return len(b) > limit }
	if !over(s.MinValue) && !over(s.MaxValue) && !over(s.Min) && !over(s.Max) {
		return false
	}
	maxV, ok := boundMax(s.MaxValue, limit)
	if !ok {
		s.MinValue, s.MaxValue, s.Min, s.Max = nil, nil, nil, nil
		return true
	}
	s.MinValue, s.MaxValue = boundMin(s.MinValue, limit), maxV
	// The deprecated fields (signed order) are written by parquet-go only
	// when asked; left out here where they would be long.
	if over(s.Min) || over(s.Max) {
		s.Min, s.Max = nil, nil
	}
	return true
}

// boundMin returns a prefix of v of at most limit bytes, which sorts before
// or equal to v. A valid UTF-8 value is cut between characters, so that the
// statistic stays valid UTF-8.
func boundMin(v []byte, limit int) []byte {
	if len(v) <= limit {
		return v
	}
	if utf8.Valid(v) {
		return bytes.Clone(v[:runePrefix(v, limit)])
	}
	return bytes.Clone(v[:limit])
}

// boundMax returns a value of at most limit bytes that sorts after or equal
// to v, bytewise: v itself when short enough, else a prefix with its last
// byte (for valid UTF-8, its last character) raised by one. ok is false
// when there is none (the prefix is all 0xff bytes, or all U+10FFFF).
func boundMax(v []byte, limit int) (_ []byte, ok bool) {
	if len(v) <= limit {
		return v, true
	}
	if utf8.Valid(v) {
		p := v[:runePrefix(v, limit)]
		for len(p) > 0 {
			r, size := utf8.DecodeLastRune(p)
			p = p[:len(p)-size]
			next := r + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
				next = 0xE000
			}
			if next > utf8.MaxRune || len(p)+utf8.RuneLen(next) > limit {
				continue
			}
			return utf8.AppendRune(bytes.Clone(p), next), true
		}
		return nil, false
	}
	p := bytes.Clone(v[:limit])
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			p[i]++
			return p[:i+1], true
		}
	}
	return nil, false
}

// runePrefix is the length of the longest prefix of v, valid UTF-8, of at
// most limit bytes that ends between characters.
func runePrefix(v []byte, limit int) int {
	n := limit
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return n
}
