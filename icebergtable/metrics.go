package icebergtable

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/s3once/s3once/internal/statbound"
	"github.com/s3once/s3once/sink"
)

// Iceberg's table properties that choose which metrics a data file
// carries: a default mode for every column and a mode per column. A mode
// is "none", "counts", "truncate(N)" (counts, and bounds of at most N
// bytes; a string is cut between characters) or "full" (counts, and bounds
// as the Parquet footer holds them). Iceberg's default is truncate(16).
const (
	propMetricsDefault = "write.metadata.metrics.default"
	propMetricsColumn  = "write.metadata.metrics.column."
	defaultMetrics     = "truncate(16)"
)

// metricsMode is one column's metrics mode: counts, and bounds of at most
// limit bytes (limit < 0: whole; limit 0 with bounds false: none).
type metricsMode struct {
	counts, bounds bool
	limit          int
}

func parseMetricsMode(s string) (metricsMode, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); {
	case s == "none":
		return metricsMode{}, nil
	case s == "counts":
		return metricsMode{counts: true}, nil
	case s == "full":
		return metricsMode{counts: true, bounds: true, limit: -1}, nil
	case strings.HasPrefix(s, "truncate(") && strings.HasSuffix(s, ")"):
		n, err := strconv.Atoi(s[len("truncate(") : len(s)-1])
		if err != nil || n <= 0 {
			break
		}
		return metricsMode{counts: true, bounds: true, limit: n}, nil
	}
	return metricsMode{}, fmt.Errorf("metrics mode %q is not none, counts, full or truncate(N) with N > 0", s)
}

// checkMetricsModes refuses metrics properties that are not modes.
func checkMetricsModes(props iceberg.Properties) error {
	for k, v := range props {
		if k == propMetricsDefault || strings.HasPrefix(k, propMetricsColumn) {
			if _, err := parseMetricsMode(v); err != nil {
				return fmt.Errorf("the table property %s: %w", k, err)
			}
		}
	}
	return nil
}

// fileMetrics are a data file's metrics, by field id, in Iceberg's
// single-value encoding.
type fileMetrics struct {
	sizes, values, nulls map[int]int64
	lower, upper         map[int][]byte
}

// metricsOf converts what the sink's writer kept of a file's footer
// (FileResult.Footer) into Iceberg metrics for schema's fields, under the
// table's metrics modes. No file is read: a result without a footer
// summary (a line format, or a build that kept none) gets no metrics.
// Columns the schema does not name, and the inner columns of nested
// types, get none either.
func metricsOf(schema *iceberg.Schema, props iceberg.Properties, footer sink.ParquetFooter) (fileMetrics, error) {
	m := fileMetrics{sizes: map[int]int64{}, values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}}
	def, err := parseMetricsMode(props.Get(propMetricsDefault, defaultMetrics))
	if err != nil {
		return m, fmt.Errorf("the table property %s: %w", propMetricsDefault, err)
	}
	for _, c := range footer.Columns {
		if len(c.Path) != 1 {
			continue
		}
		field, ok := schema.FindFieldByName(c.Path[0])
		if !ok {
			continue
		}
		mode := def
		if v, ok := props[propMetricsColumn+field.Name]; ok {
			if mode, err = parseMetricsMode(v); err != nil {
				return m, fmt.Errorf("the table property %s%s: %w", propMetricsColumn, field.Name, err)
			}
		}
		if !mode.counts {
			continue
		}
		m.sizes[field.ID] = c.Bytes
		m.values[field.ID] = c.Values
		m.nulls[field.ID] = c.Nulls
		if !mode.bounds || !c.HasBounds {
			continue
		}
		if lo, hi, ok := icebergBounds(field.Type, c.Min, c.Max, mode.limit); ok {
			m.lower[field.ID] = lo
			if hi != nil {
				m.upper[field.ID] = hi
			}
		}
	}
	return m, nil
}

// icebergBounds turns a column's Parquet bounds (PLAIN-encoded) into
// Iceberg's single-value encoding of typ, cut to limit bytes for strings
// and binary (limit < 0: not cut). For the types an Iceberg table is made
// from here (SchemaOf) the two encodings agree byte for byte: booleans as
// one byte, int and long, float and double little-endian, nanosecond
// timestamps as a little-endian long, strings as UTF-8, binary and fixed
// as their bytes. ok is false when there is no lower bound to give (the
// bytes are not of the type, a float bound is NaN, a string is not UTF-8);
// hi is nil when only the lower bound can be given (no cut value bounds
// the max from above).
func icebergBounds(typ iceberg.Type, lo, hi []byte, limit int) (_, _ []byte, ok bool) {
	switch t := typ.(type) {
	case iceberg.BooleanType:
		return lo, hi, len(lo) == 1 && len(hi) == 1
	case iceberg.Int32Type:
		return lo, hi, len(lo) == 4 && len(hi) == 4
	case iceberg.Int64Type, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return lo, hi, len(lo) == 8 && len(hi) == 8
	case iceberg.Float32Type:
		return lo, hi, len(lo) == 4 && len(hi) == 4 && !isNaN32(lo) && !isNaN32(hi)
	case iceberg.Float64Type:
		return lo, hi, len(lo) == 8 && len(hi) == 8 && !isNaN64(lo) && !isNaN64(hi)
	case iceberg.FixedType:
		return lo, hi, len(lo) == t.Len() && len(hi) == t.Len()
	case iceberg.StringType:
		if !utf8.Valid(lo) || !utf8.Valid(hi) {
			return nil, nil, false
		}
		return cut(lo, hi, limit)
	case iceberg.BinaryType:
		return cut(lo, hi, limit)
	}
	return nil, nil, false
}

// cut bounds lo and hi to limit bytes (statbound); hi is nil where no
// value of limit bytes bounds it.
func cut(lo, hi []byte, limit int) (_, _ []byte, ok bool) {
	if limit < 0 {
		return lo, hi, true
	}
	up, ok := statbound.Upper(hi, limit)
	if !ok {
		up = nil
	}
	return statbound.Lower(lo, limit), up, true
}

func isNaN32(b []byte) bool {
	return math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
}

func isNaN64(b []byte) bool { return math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b))) }
