package icebergtable

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// ErrSchema is wrapped by the errors of a record type that has no Iceberg
// schema here, and of a table whose schema is not the record type's.
var ErrSchema = errors.New("s3once iceberg: schema")

var (
	timeType  = reflect.TypeFor[time.Time]()
	bytesType = reflect.TypeFor[[]byte]()
)

// SchemaOf is the Iceberg schema of the Parquet files the sink writes for
// records of type t (a struct): one column per field, named as the Parquet
// column is (the field's name, or the name its `parquet` tag gives), with
// field IDs from 1 in declaration order. A pointer field is optional, any
// other required. It returns the table format version the schema needs: 3
// when a column is a nanosecond timestamp, else 2.
//
// Go type to Iceberg type:
//
//	bool                  boolean
//	int8, int16, int32    int
//	int, int64            long
//	float32, float64      float, double
//	string                string
//	[]byte                binary
//	[N]byte               fixed[N]
//	time.Time             timestamptz_ns (format version 3)
//	*T                    T, optional
//
// Refused, naming the field: unsigned integers (uint, uint8, uint16,
// uint32, uint64, uintptr: Iceberg has no unsigned types, and a uint64 does
// not fit a long), nested structs other than embedded ones, slices other
// than []byte, maps, arrays other than byte arrays, and fields whose
// `parquet` tag sets anything beyond the column's name (an encoding or a
// type the schema would not follow).
func SchemaOf(t reflect.Type) (*iceberg.Schema, int, error) {
	if t == nil || t.Kind() != reflect.Struct || t == timeType {
		return nil, 0, fmt.Errorf("%w: an Iceberg table is made from a struct type, not %v", ErrSchema, t)
	}
	b := schemaBuilder{version: 2, names: map[string]bool{}}
	if err := b.fields(t, t.String()); err != nil {
		return nil, 0, err
	}
	if len(b.out) == 0 {
		return nil, 0, fmt.Errorf("%w: type %v has no exported field, so no column", ErrSchema, t)
	}
	return iceberg.NewSchema(0, b.out...), b.version, nil
}

type schemaBuilder struct {
	out     []iceberg.NestedField
	version int
	names   map[string]bool
}

func (b *schemaBuilder) fields(t reflect.Type, path string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, hasTag := f.Tag.Lookup("parquet")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		where := path + "." + f.Name
		if hasTag && opts != "" {
			return fmt.Errorf("%w: field %s: its parquet tag %q sets options; an Iceberg table takes only a column name in the tag", ErrSchema, where, tag)
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Type != timeType && name == "" {
			if err := b.fields(f.Type, where); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft, required := f.Type, true
		if ft.Kind() == reflect.Pointer {
			ft, required = ft.Elem(), false
		}
		typ, err := b.typeOf(ft)
		if err != nil {
			return fmt.Errorf("%w: field %s (%v): %s", ErrSchema, where, f.Type, err.Error())
		}
		if b.names[name] {
			return fmt.Errorf("%w: field %s: a second column named %q", ErrSchema, where, name)
		}
		b.names[name] = true
		b.out = append(b.out, iceberg.NestedField{ID: len(b.out) + 1, Name: name, Type: typ, Required: required})
	}
	return nil
}

func (b *schemaBuilder) typeOf(t reflect.Type) (iceberg.Type, error) {
	switch {
	case t == timeType:
		b.version = 3
		return iceberg.PrimitiveTypes.TimestampTzNs, nil
	case t == bytesType || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && t.Elem().PkgPath() == ""):
		return iceberg.PrimitiveTypes.Binary, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return iceberg.PrimitiveTypes.Bool, nil
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return iceberg.PrimitiveTypes.Int32, nil
	case reflect.Int, reflect.Int64:
		return iceberg.PrimitiveTypes.Int64, nil
	case reflect.Float32:
		return iceberg.PrimitiveTypes.Float32, nil
	case reflect.Float64:
		return iceberg.PrimitiveTypes.Float64, nil
	case reflect.String:
		return iceberg.PrimitiveTypes.String, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return nil, errors.New("Iceberg has no unsigned integer types (use a signed type wide enough for the values)")
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return iceberg.FixedTypeOf(t.Len()), nil
		}
		return nil, errors.New("arrays other than byte arrays have no Iceberg column here")
	case reflect.Struct:
		return nil, errors.New("nested structs are not written to Iceberg tables by this version (embed the struct, or flatten its fields)")
	case reflect.Slice:
		return nil, errors.New("lists are not written to Iceberg tables by this version")
	default:
		return nil, fmt.Errorf("a %v has no Iceberg column", t.Kind())
	}
}

// sameSchema compares a table's schema with the record type's, ignoring
// field IDs, and describes the first difference ("" when they match).
func sameSchema(table, want *iceberg.Schema) string {
	tf, wf := table.Fields(), want.Fields()
	for i := 0; i < len(tf) || i < len(wf); i++ {
		switch {
		case i >= len(tf):
			return fmt.Sprintf("the table has no column %q (%s)", wf[i].Name, wf[i].Type)
		case i >= len(wf):
			return fmt.Sprintf("the table has a column %q (%s) that the record type lacks", tf[i].Name, tf[i].Type)
		case tf[i].Name != wf[i].Name:
			return fmt.Sprintf("column %d is %q in the table, %q in the record type", i+1, tf[i].Name, wf[i].Name)
		case !tf[i].Type.Equals(wf[i].Type):
			return fmt.Sprintf("column %q is %s in the table, %s in the record type", tf[i].Name, tf[i].Type, wf[i].Type)
		case tf[i].Required != wf[i].Required:
			return fmt.Sprintf("column %q is %s in the table, %s in the record type", tf[i].Name, requiredWord(tf[i].Required), requiredWord(wf[i].Required))
		}
	}
	return ""
}

func requiredWord(r bool) string {
	if r {
		return "required"
	}
	return "optional"
}
