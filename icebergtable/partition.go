package icebergtable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/s3once/s3once/sink"
)

// ErrPartition is wrapped by the errors of a partition spec that cannot
// be used here, of a table partitioned otherwise, and of a file whose
// destination is not its records' partition.
var ErrPartition = errors.New("s3once iceberg: partition")

// PartitionField is one field of a table's partition spec: a transform of
// one of the record's columns. Make one with Identity, Day or Hour, and
// name it with As.
type PartitionField struct {
	// Column is the source column's name, as SchemaOf names it.
	Column string `json:"column"`
	// Transform is "identity", "day" or "hour".
	Transform string `json:"transform"`
	// Field is the partition field's name in the table's spec and in the
	// destination's "name=value" segments; "" gives Iceberg's default
	// (see Name).
	Field string `json:"field,omitempty"`
}

// Identity partitions by a column's value: a bool, an integer or a string
// column.
func Identity(column string) PartitionField {
	return PartitionField{Column: column, Transform: "identity"}
}

// Day partitions by the day (UTC) of a time.Time column.
func Day(column string) PartitionField { return PartitionField{Column: column, Transform: "day"} }

// Hour partitions by the hour (UTC) of a time.Time column.
func Hour(column string) PartitionField { return PartitionField{Column: column, Transform: "hour"} }

// As names the partition field: the name in the table's spec and in each
// destination's "name=value" segment. A pipeline whose destinations
// already read "topic=<value>" for a column Topic partitions by
// Identity("Topic").As("topic").
func (f PartitionField) As(name string) PartitionField {
	f.Field = name
	return f
}

// Name is the partition field's name in the table's spec: the one As gave,
// or else Iceberg's default, the column's name for identity and the
// column's name and the transform's otherwise ("At_day").
func (f PartitionField) Name() string {
	switch {
	case f.Field != "":
		return f.Field
	case f.Transform == "identity":
		return f.Column
	}
	return f.Column + "_" + f.Transform
}

func (f PartitionField) transform() (iceberg.Transform, error) {
	switch f.Transform {
	case "identity":
		return iceberg.IdentityTransform{}, nil
	case "day":
		return iceberg.DayTransform{}, nil
	case "hour":
		return iceberg.HourTransform{}, nil
	}
	return nil, fmt.Errorf("%w: field %q: transform %q is not identity, day or hour", ErrPartition, f.Column, f.Transform)
}

// partitionSpec builds the spec of fields over schema, checking each field:
// a required column (a file's partition value is never null here), of a
// type its transform takes.
func partitionSpec(schema *iceberg.Schema, fields []PartitionField) (iceberg.PartitionSpec, error) {
	if len(fields) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	var opts []iceberg.PartitionOption
	seen := map[string]bool{}
	for i, f := range fields {
		tr, err := f.transform()
		if err != nil {
			return iceberg.PartitionSpec{}, err
		}
		if f.Field != "" && !utf8.ValidString(f.Field) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field of column %q: the name %q is not UTF-8", ErrPartition, f.Column, f.Field)
		}
		if other, ok := schema.FindFieldByName(f.Name()); ok && (f.Transform != "identity" || other.Name != f.Column) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: the name is the record's column %q; name a partition field apart from the columns (As), unless it is the identity of that column", ErrPartition, f.Name(), other.Name)
		}
		col, ok := schema.FindFieldByName(f.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: the record type has no column %q", ErrPartition, f.Name(), f.Column)
		}
		if !col.Required {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: column %q is optional (a pointer); partition by a column that always has a value", ErrPartition, f.Name(), f.Column)
		}
		switch col.Type.(type) {
		case iceberg.TimestampTzNsType:
			if f.Transform == "identity" {
				return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: partition a time column by day or hour, not by its value", ErrPartition, f.Name())
			}
		case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.StringType:
			if f.Transform != "identity" {
				return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: %s takes a time.Time column; column %q is %s", ErrPartition, f.Name(), f.Transform, f.Column, col.Type)
			}
		default:
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q: column %q is %s; partition by a bool, integer, string or time column", ErrPartition, f.Name(), f.Column, col.Type)
		}
		if seen[f.Name()] {
			return iceberg.PartitionSpec{}, fmt.Errorf("%w: field %q appears twice", ErrPartition, f.Name())
		}
		seen[f.Name()] = true
		id := iceberg.PartitionDataIDStart + i
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(col.ID, f.Name(), tr, schema, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("%w: %w", ErrPartition, err)
	}
	return spec, nil
}

// sameSpec compares a table's partition spec with the configured fields
// (by source column, transform and name) and describes the first
// difference ("" when they match).
func sameSpec(spec iceberg.PartitionSpec, schema *iceberg.Schema, fields []PartitionField) string {
	describe := func(s iceberg.PartitionSpec) []string {
		var out []string
		for _, f := range s.Fields() {
			col, _ := schema.FindColumnName(f.SourceID())
			out = append(out, fmt.Sprintf("%s(%s) as %s", f.Transform, col, f.Name))
		}
		return out
	}
	want, err := partitionSpec(schema, fields)
	if err != nil {
		return err.Error()
	}
	have, wanted := describe(spec), describe(want)
	if strings.Join(have, ", ") == strings.Join(wanted, ", ") {
		return ""
	}
	return fmt.Sprintf("the table is partitioned by [%s], the run by [%s]", strings.Join(have, ", "), strings.Join(wanted, ", "))
}

// PartitionPath returns the partition of record (a struct of the table's
// record type) under fields: "name=value" for each field, joined by '/',
// in Iceberg's human form ("At_day=2024-06-01", "At_hour=2024-06-01-10",
// "Region=eu", the value escaped as in a URL query). A sink.Config's
// Destination returns it, so that each file holds one partition:
//
//	var byDay = []icebergtable.PartitionField{icebergtable.Day("At")}
//
//	func eventPartition(e Event) (string, error) { return icebergtable.PartitionPath(byDay, e) }
//
// with eventPartition registered (register.Function1x2) and the same
// fields in Config.Partition. The table stage parses each file's
// destination back into its partition values, and refuses a file whose
// bounds (from its footer) hold records of another partition.
func PartitionPath(fields []PartitionField, record any) (string, error) {
	v := reflect.ValueOf(record)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", fmt.Errorf("%w: a partition path is of a struct record, not %T", ErrPartition, record)
	}
	idx, err := columnIndexes(v.Type(), fields)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.QueryEscape(f.Name()))
		b.WriteByte('=')
		val, err := humanValue(f, v.FieldByIndex(idx[i]))
		if err != nil {
			return "", err
		}
		b.WriteString(val)
	}
	return b.String(), nil
}

// columnIndexes finds each field's column in the struct type t, the way
// SchemaOf names columns; cached by type and fields.
func columnIndexes(t reflect.Type, fields []PartitionField) ([][]int, error) {
	key := indexKey{t, fieldsKey(fields)}
	if v, ok := indexCache.Load(key); ok {
		return v.([][]int), nil
	}
	cols := map[string][]int{}
	var walk func(t reflect.Type, at []int)
	walk = func(t reflect.Type, at []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _ := f.Tag.Lookup("parquet")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			path := append(append([]int(nil), at...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Type != timeType && name == "" {
				walk(f.Type, path)
				continue
			}
			if name == "" {
				name = f.Name
			}
			cols[name] = path
		}
	}
	walk(t, nil)
	out := make([][]int, len(fields))
	for i, f := range fields {
		path, ok := cols[f.Column]
		if !ok {
			return nil, fmt.Errorf("%w: field %q: type %v has no column %q", ErrPartition, f.Name(), t, f.Column)
		}
		out[i] = path
	}
	indexCache.Store(key, out)
	return out, nil
}

// fieldsKey names fields in a cache key, without reflection (PartitionPath
// runs for every record).
func fieldsKey(fields []PartitionField) string {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f.Column)
		b.WriteByte(0)
		b.WriteString(f.Transform)
		b.WriteByte(0)
		b.WriteString(f.Field)
		b.WriteByte(0)
	}
	return b.String()
}

type indexKey struct {
	t      reflect.Type
	fields string
}

var indexCache sync.Map // indexKey -> [][]int

// The human forms of day and hour values, in UTC.
const (
	dayLayout  = "2006-01-02"
	hourLayout = "2006-01-02-15"
)

func humanValue(f PartitionField, v reflect.Value) (string, error) {
	switch f.Transform {
	case "day", "hour":
		tm, ok := v.Interface().(time.Time)
		if !ok {
			return "", fmt.Errorf("%w: field %q: column %q is a %v, not a time.Time", ErrPartition, f.Name(), f.Column, v.Type())
		}
		if f.Transform == "day" {
			return tm.UTC().Format(dayLayout), nil
		}
		return tm.UTC().Format(hourLayout), nil
	case "identity":
		switch v.Kind() {
		case reflect.Bool:
			return strconv.FormatBool(v.Bool()), nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.FormatInt(v.Int(), 10), nil
		case reflect.String:
			return url.QueryEscape(v.String()), nil
		}
		return "", fmt.Errorf("%w: field %q: column %q is a %v; partition by a bool, integer or string value", ErrPartition, f.Name(), f.Column, v.Type())
	}
	_, err := f.transform()
	return "", err
}

// partitionOf parses a file's destination into its partition data (by
// partition field id) under spec, and checks it against the file's
// bounds: a file whose records are not all of that partition is refused.
// It also returns the avro logical types of the data (day values are
// dates).
func partitionOf(spec iceberg.PartitionSpec, schema *iceberg.Schema, f sink.FileResult) (map[int]any, map[int]string, error) {
	if spec.NumFields() == 0 {
		return nil, nil, nil
	}
	where := fmt.Sprintf("s3://%s/%s", f.Bucket, f.Key)
	segs := strings.Split(f.Destination, "/")
	if segs[0] == "" || len(segs) != spec.NumFields() {
		return nil, nil, fmt.Errorf("%w: %s: its destination %q is not a partition of the table's %d fields; the sink's Destination must return PartitionPath of the record", ErrPartition, where, f.Destination, spec.NumFields())
	}
	data, logical := map[int]any{}, map[int]string{}
	i := 0
	for _, pf := range spec.Fields() {
		name, raw, ok := strings.Cut(segs[i], "=")
		i++
		if n, err := url.QueryUnescape(name); !ok || err != nil || n != pf.Name {
			return nil, nil, fmt.Errorf("%w: %s: destination segment %q is not of the partition field %q; the sink's Destination must return PartitionPath of the record", ErrPartition, where, segs[i-1], pf.Name)
		}
		col, _ := schema.FindFieldByID(pf.SourceID())
		val, lo, hi, err := parsePartitionValue(pf.Transform, col.Type, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: partition field %q: %w", ErrPartition, where, pf.Name, err)
		}
		if err := checkHolds(f.Footer, col, lo, hi); err != nil {
			return nil, nil, fmt.Errorf("%w: %s holds records outside its partition %s: %w; the sink's Destination must return PartitionPath of the record, with the table's partition fields", ErrPartition, where, segs[i-1], err)
		}
		data[pf.FieldID] = val
		if _, ok := pf.Transform.(iceberg.DayTransform); ok {
			logical[pf.FieldID] = "date"
		}
	}
	return data, logical, nil
}

// parsePartitionValue parses a partition value from its human form, and
// returns the range of the column's values it stands for, in the column's
// PLAIN encoding (lo and hi inclusive).
func parsePartitionValue(tr iceberg.Transform, typ iceberg.Type, raw string) (val any, lo, hi []byte, err error) {
	le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	switch tr.(type) {
	case iceberg.DayTransform, iceberg.HourTransform:
		layout, unit := dayLayout, 24*time.Hour
		if _, ok := tr.(iceberg.HourTransform); ok {
			layout, unit = hourLayout, time.Hour
		}
		tm, err := time.Parse(layout, raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%q is not a %s value (%s)", raw, tr, layout)
		}
		n := tm.Unix() / int64(unit/time.Second)
		first := tm.UnixNano()
		last := tm.Add(unit).UnixNano() - 1
		if _, ok := tr.(iceberg.DayTransform); ok {
			return iceberg.Date(n), le64(first), le64(last), nil
		}
		return int32(n), le64(first), le64(last), nil
	case iceberg.IdentityTransform:
		switch typ.(type) {
		case iceberg.BooleanType:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%q is not a bool", raw)
			}
			enc := []byte{0}
			if b {
				enc[0] = 1
			}
			return b, enc, enc, nil
		case iceberg.Int32Type:
			n, err := strconv.ParseInt(raw, 10, 32)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%q is not an int", raw)
			}
			enc := binary.LittleEndian.AppendUint32(nil, uint32(n))
			return int32(n), enc, enc, nil
		case iceberg.Int64Type:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%q is not a long", raw)
			}
			return n, le64(n), le64(n), nil
		case iceberg.StringType:
			s, err := url.QueryUnescape(raw)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%q is not an escaped string", raw)
			}
			return s, []byte(s), []byte(s), nil
		}
	}
	return nil, nil, nil, fmt.Errorf("transform %s of a %s column is not written here", tr, typ)
}

// checkHolds checks that the file's bounds of the column lie in [lo, hi].
// A string's footer bounds may be cut (to 64 bytes), so a string column is
// checked to hold the value between its bounds. A file without bounds for
// the column (a footer that kept none) cannot be checked and passes.
func checkHolds(footer sink.ParquetFooter, col iceberg.NestedField, lo, hi []byte) error {
	for _, c := range footer.Columns {
		if len(c.Path) != 1 || c.Path[0] != col.Name || !c.HasBounds {
			continue
		}
		switch col.Type.(type) {
		case iceberg.StringType:
			if bytes.Compare(c.Min, lo) > 0 || bytes.Compare(c.Max, hi) < 0 {
				return fmt.Errorf("column %q spans [%q, %q]", col.Name, c.Min, c.Max)
			}
			return nil
		case iceberg.BooleanType:
			if !bytes.Equal(c.Min, lo) || !bytes.Equal(c.Max, hi) {
				return fmt.Errorf("column %q spans [%v, %v]", col.Name, c.Min, c.Max)
			}
			return nil
		case iceberg.Int32Type:
			if len(c.Min) != 4 || len(c.Max) != 4 || len(lo) != 4 {
				return nil
			}
			mn, mx := int32(binary.LittleEndian.Uint32(c.Min)), int32(binary.LittleEndian.Uint32(c.Max))
			if mn < int32(binary.LittleEndian.Uint32(lo)) || mx > int32(binary.LittleEndian.Uint32(hi)) {
				return fmt.Errorf("column %q spans [%d, %d]", col.Name, mn, mx)
			}
			return nil
		case iceberg.Int64Type, iceberg.TimestampTzNsType:
			if len(c.Min) != 8 || len(c.Max) != 8 || len(lo) != 8 {
				return nil
			}
			mn, mx := int64(binary.LittleEndian.Uint64(c.Min)), int64(binary.LittleEndian.Uint64(c.Max))
			if mn < int64(binary.LittleEndian.Uint64(lo)) || mx > int64(binary.LittleEndian.Uint64(hi)) {
				if _, ok := col.Type.(iceberg.TimestampTzNsType); ok {
					return fmt.Errorf("column %q spans [%s, %s]", col.Name, time.Unix(0, mn).UTC().Format(time.RFC3339Nano), time.Unix(0, mx).UTC().Format(time.RFC3339Nano))
				}
				return fmt.Errorf("column %q spans [%d, %d]", col.Name, mn, mx)
			}
			return nil
		}
	}
	return nil
}
