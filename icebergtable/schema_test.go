package icebergtable

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type Embedded struct {
	Region string
}

type allTypes struct {
	B      bool
	I8     int8
	I16    int16
	I32    int32
	I      int
	I64    int64
	F32    float32
	F64    float64
	S      string `parquet:"s_name"`
	Raw    []byte
	Digest [16]byte
	P      *int64
	Skip   string `parquet:"-"`
	hidden int
	Embedded
}

// SchemaOf maps each Go type as documented, names columns as the Parquet
// files do, and asks for format version 3 only for a time.Time column.
func TestSchemaOf(t *testing.T) {
	s, version, err := SchemaOf(reflect.TypeFor[allTypes]())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range s.Fields() {
		req := "optional"
		if f.Required {
			req = "required"
		}
		got = append(got, f.Name+" "+f.Type.String()+" "+req)
	}
	want := []string{
		"B boolean required", "I8 int required", "I16 int required", "I32 int required",
		"I long required", "I64 long required", "F32 float required", "F64 double required",
		"s_name string required", "Raw binary required", "Digest fixed[16] required", "P long optional",
		"Region string required",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("SchemaOf:\n got %v\nwant %v", got, want)
	}
	if version != 2 {
		t.Errorf("format version %d, want 2 without a time column", version)
	}
	_ = allTypes{}.hidden
	type withTime struct {
		At *time.Time
	}
	s, version, err = SchemaOf(reflect.TypeFor[withTime]())
	if err != nil || version != 3 || s.Fields()[0].Type.String() != "timestamptz_ns" || s.Fields()[0].Required {
		t.Errorf("a *time.Time column: %v, version %d, %v; want an optional timestamptz_ns in version 3", s, version, err)
	}
}

// Types without an Iceberg column are refused, naming the field.
func TestSchemaOfRefuses(t *testing.T) {
	type u8 struct{ Small uint8 }
	type uintptrs struct{ P uintptr }
	type nested struct{ Inner struct{ A int } }
	type list struct{ Tags []string }
	type maps struct{ M map[string]int }
	type tagged struct {
		T int64 `parquet:"t,delta"`
	}
	type dup struct {
		A int64 `parquet:"x"`
		B int64 `parquet:"x"`
	}
	for _, c := range []struct {
		t     reflect.Type
		field string
	}{
		{reflect.TypeFor[u8](), "u8.Small"},
		{reflect.TypeFor[uintptrs](), "uintptrs.P"},
		{reflect.TypeFor[nested](), "nested.Inner"},
		{reflect.TypeFor[list](), "list.Tags"},
		{reflect.TypeFor[maps](), "maps.M"},
		{reflect.TypeFor[tagged](), "tagged.T"},
		{reflect.TypeFor[dup](), "dup.B"},
		{reflect.TypeFor[int](), "int"},
		{reflect.TypeFor[struct{ x int }](), "no exported field"},
	} {
		_, _, err := SchemaOf(c.t)
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("SchemaOf(%v) = %v, want ErrSchema naming %s", c.t, err, c.field)
		}
	}
}
