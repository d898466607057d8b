package parquetbody

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/s3once/s3once/internal/parquetrow"
)

// listTypes caches ListType's results: reflect.Type -> listResult.
var listTypes sync.Map

type listResult struct {
	t   reflect.Type
	err error
}

// ListType returns the type output version 2 writes a struct type t as: the
// fields t's row encoding holds (embedded structs flattened, unexported and
// `parquet:"-"` fields left out), in the same order, each slice other than
// []byte tagged `list`, and nested structs derived alike. parquet-go then
// writes every slice as the standard three-level LIST (a group annotated
// LIST holding a repeated group "list" of one field "element"), which
// Iceberg requires and Spark, Trino, Athena and DuckDB read as a list,
// where a bare repeated field is what version 1 writes. The row encoding of
// t and of its list type are the same bytes (both have the fields of
// parquetrow.Fields, with the same types but for slices' element types), so
// the writer decodes records into the list type and hands those to
// parquet-go.
func ListType(t reflect.Type) (reflect.Type, error) {
	if r, ok := listTypes.Load(t); ok {
		return r.(listResult).t, r.(listResult).err
	}
	lt, err := deriveList(t, t.String(), map[reflect.Type]bool{})
	listTypes.Store(t, listResult{lt, err})
	return lt, err
}

func deriveList(t reflect.Type, path string, open map[reflect.Type]bool) (_ reflect.Type, err error) {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return t, nil
	case t.Kind() == reflect.Pointer:
		e, err := deriveList(t.Elem(), path, open)
		if err != nil {
			return nil, err
		}
		return reflect.PointerTo(e), nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		e, err := deriveList(t.Elem(), path+"[]", open)
		if err != nil {
			return nil, err
		}
		return reflect.SliceOf(e), nil
	case t.Kind() != reflect.Struct:
		return t, nil
	}
	if open[t] {
		return nil, fmt.Errorf("format \"parquet\": field %s has type %v: the type holds itself; Parquet schemas are finite", path, t)
	}
	open[t] = true
	defer delete(open, t)
	fields, err := parquetrow.Fields(t, path)
	if err != nil {
		return nil, err
	}
	out := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		ft, err := deriveList(f.Type, path+"."+f.Name, open)
		if err != nil {
			return nil, err
		}
		tag := f.Tag
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			tag = withListTag(tag)
		}
		out[i] = reflect.StructField{Name: f.Name, Type: ft, Tag: tag}
	}
	defer func() {
		if r := recover(); r != nil { // two fields of one name, from embedded structs
			err = fmt.Errorf("format \"parquet\": type %v: its fields cannot be written as one Parquet group: %v", t, r)
		}
	}()
	return reflect.StructOf(out), nil
}

// withListTag adds the `list` option to a field's parquet tag, keeping its
// name and other options, and the field's other tags.
func withListTag(tag reflect.StructTag) reflect.StructTag {
	old, ok := tag.Lookup("parquet")
	if !ok {
		return reflect.StructTag(strings.TrimSpace(`parquet:",list" ` + string(tag)))
	}
	name, opts, _ := strings.Cut(old, ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "list" {
			return tag
		}
	}
	rest := strings.TrimSpace(strings.Replace(string(tag), "parquet:"+strconv.Quote(old), "", 1))
	return reflect.StructTag(strings.TrimSpace("parquet:" + strconv.Quote(name+","+strings.TrimPrefix(opts+",list", ",")) + " " + rest))
}
