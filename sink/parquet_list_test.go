package sink

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/parquetrow"
)

type listInner struct {
	Codes []int32
	Name  string
}

type listBase struct {
	Keys []string `parquet:"keys,zstd" json:"keys"`
}

type listOuter struct {
	listBase
	Already []int64 `parquet:",list"`
	Blob    []byte
	Inner   listInner
	Many    []listInner
	Ptr     *listInner
	hidden  []string
	Skipped []string `parquet:"-"`
}

type listClash struct {
	listBase
	Keys []string
}

// TestListType checks the type output version 2 writes: embedded fields
// flattened, hidden and skipped fields gone, every slice but []byte tagged
// list (once), other tags kept, nested structs derived; and a record of the
// user's type decodes into it and encodes back to the same bytes.
func TestListType(t *testing.T) {
	lt, err := listType(reflect.TypeFor[listOuter]())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < lt.NumField(); i++ {
		names = append(names, lt.Field(i).Name)
	}
	if got := strings.Join(names, ","); got != "Keys,Already,Blob,Inner,Many,Ptr" {
		t.Fatalf("fields %s", got)
	}
	tags := map[string]string{
		"Keys": `parquet:"keys,zstd,list" json:"keys"`, "Already": `parquet:",list"`, "Blob": "", "Inner": "",
		"Many": `parquet:",list"`, "Ptr": "",
	}
	for name, want := range tags {
		f, _ := lt.FieldByName(name)
		if string(f.Tag) != want {
			t.Errorf("%s: tag %q, want %q", name, f.Tag, want)
		}
	}
	inner, _ := lt.FieldByName("Inner")
	if f, _ := inner.Type.FieldByName("Codes"); f.Tag.Get("parquet") != ",list" {
		t.Errorf("Inner.Codes: tag %q", f.Tag)
	}
	many, _ := lt.FieldByName("Many")
	ptr, _ := lt.FieldByName("Ptr")
	if many.Type.Elem() != inner.Type || ptr.Type.Elem() != inner.Type {
		t.Errorf("Many %v and Ptr %v do not hold the derived %v", many.Type, ptr.Type, inner.Type)
	}

	v := listOuter{listBase: listBase{Keys: []string{"b", "a"}}, Already: []int64{3}, Blob: []byte{0, 1},
		Inner: listInner{Codes: []int32{}, Name: "x"}, Many: []listInner{{Codes: []int32{1, 2}}, {Name: "y"}},
		Ptr: &listInner{Name: "p"}, hidden: []string{"h"}, Skipped: []string{"s"}}
	user, err := parquetrow.New(reflect.TypeFor[listOuter]())
	if err != nil {
		t.Fatal(err)
	}
	list, err := parquetrow.New(lt)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := user.Append(nil, reflect.ValueOf(v))
	if err != nil {
		t.Fatal(err)
	}
	lv := reflect.New(lt).Elem()
	if err := list.Decode(rec, lv); err != nil {
		t.Fatal(err)
	}
	again, err := list.Append(nil, lv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec, again) {
		t.Errorf("the list type encodes %x, the user's type %x", again, rec)
	}
	if _, err := parquetSchema(lt); err != nil {
		t.Error(err)
	}

	if _, err := listType(reflect.TypeFor[listClash]()); err == nil {
		t.Error("two fields named Keys made a type")
	}
}

// TestParquetList checks the schema of each output version's files:
// version 2 writes slices as three-level LISTs, version 1 as bare repeated
// fields.
func TestParquetList(t *testing.T) {
	for version, want := range map[int][]string{
		1: {"repeated binary Tags (STRING);", "repeated group Items {"},
		2: {"required group Tags (LIST) {\n\t\trepeated group list {\n\t\t\trequired binary element (STRING);",
			"required group Items (LIST) {\n\t\trepeated group list {\n\t\t\trequired group element {"},
	} {
		f := encodeParquet(t, version, pqEvents(5, 2))
		pf, err := parquet.OpenFile(bytes.NewReader(f), int64(len(f)))
		if err != nil {
			t.Fatal(err)
		}
		schema := pf.Schema().String()
		for _, w := range want {
			if !strings.Contains(schema, w) {
				t.Errorf("version %d: the schema does not hold %q:\n%s", version, w, schema)
			}
		}
	}
}
