package sink

import "github.com/s3once/s3once/internal/filebody"

// ParquetFooter is what a Parquet file's footer records, summed over its
// row groups: where each row group starts, and each column's sizes, counts
// and bounds. The writer takes it from the footer it has just written, so
// no file is read back; a stage after the sink (an Iceberg table's data
// file metrics) reads it from FileResult.Footer.
type ParquetFooter struct {
	// RowGroupOffsets is the offset in the file of each row group's first
	// page, in file order: where a reader may split the file.
	RowGroupOffsets []int64 `json:"rowGroupOffsets,omitempty"`
	// Columns holds one entry per leaf column, in schema order.
	Columns []ColumnStats `json:"columns,omitempty"`
}

// ColumnStats is what a Parquet file's footer records of one leaf column.
type ColumnStats struct {
	// Path is the column's path in the Parquet schema ([name] for a
	// top-level field; a list's element is [name, "list", "element"]).
	Path []string `json:"path"`
	// Bytes is the size of the column's chunks in the file, compressed,
	// page headers included.
	Bytes int64 `json:"bytes"`
	// Values counts its values, nulls included; Nulls the null values.
	Values int64 `json:"values"`
	Nulls  int64 `json:"nulls"`
	// Min and Max bound its non-null values, in Parquet's PLAIN encoding of
	// the column's physical type (a byte array's bytes without a length),
	// compared in the order of its logical type. HasBounds is false when
	// some row group holding values records no bounds: then there are none
	// for the file. A byte-array column's bounds are at most 64 bytes in
	// output version 2: Min may be a prefix of the least value, and Max a
	// cut value rounded up. A column of nulls only has no bounds either.
	Min       []byte `json:"min,omitempty"`
	Max       []byte `json:"max,omitempty"`
	HasBounds bool   `json:"hasBounds,omitempty"`
}

// parquetFooter is the ParquetFooter of a file body's summary (empty for
// the line formats).
func parquetFooter(s filebody.Summary) ParquetFooter {
	out := ParquetFooter{RowGroupOffsets: s.SplitOffsets}
	for _, c := range s.Columns {
		out.Columns = append(out.Columns, ColumnStats{Path: c.Path, Bytes: c.Bytes, Values: c.Values, Nulls: c.Nulls, Min: c.Min, Max: c.Max, HasBounds: c.HasBounds})
	}
	return out
}
