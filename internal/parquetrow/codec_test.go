package parquetrow

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type base struct {
	ID   uint32
	note string
}

type tagged struct {
	base
	Dash    int8 `parquet:"-,"` // a column named "-": kept
	Skipped int8 `parquet:"-"`
	Name    string
	hidden  bool
}

// TestFields checks which fields a row holds, and their index paths, by
// parquet-go's rules.
func TestFields(t *testing.T) {
	fields, err := Fields(reflect.TypeFor[tagged](), "tagged")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.Name+fmt.Sprint(f.Index))
	}
	want := []string{"ID[0 0]", "Dash[1]", "Name[3]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}

	type embedsPointer struct{ *base }
	if _, err := Fields(reflect.TypeFor[embedsPointer](), "embedsPointer"); err == nil || !strings.Contains(err.Error(), "embedsPointer.base") {
		t.Errorf("an embedded pointer: %v; want an error naming embedsPointer.base", err)
	}
}

// TestCodec checks a codec's bytes for a type with embedded, skipped and
// nested fields, that it takes values that cannot be addressed, and that it
// decodes its own bytes back.
func TestCodec(t *testing.T) {
	type outer struct {
		tagged
		Parts []*tagged
	}
	c, err := New(reflect.TypeFor[outer]())
	if err != nil {
		t.Fatal(err)
	}
	if c.Type() != reflect.TypeFor[outer]() {
		t.Errorf("Type() = %v", c.Type())
	}
	in := outer{
		tagged: tagged{base: base{ID: 7, note: "n"}, Dash: -1, Skipped: 9, Name: "\x00", hidden: true},
		Parts:  []*tagged{nil, {Name: "p"}},
	}
	row, err := c.Append([]byte{0xAA}, reflect.ValueOf(in)) // not addressable
	if err != nil {
		t.Fatal(err)
	}
	want := "aa" + // what was there
		"00000007" + "7f" + "00ff0001" + // ID, Dash, Name
		"01" + "0100" + "01" + "01" + "00000000" + "80" + "700001" + "00" // Parts: nil, {Name: "p"}, end
	if got := hex.EncodeToString(row); got != want {
		t.Fatalf("row %s, want %s", got, want)
	}
	var out outer
	if err := c.Decode(row[1:], reflect.ValueOf(&out).Elem()); err != nil {
		t.Fatal(err)
	}
	in.note, in.Skipped, in.hidden = "", 0, false
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
}

// TestDecodeMalformed checks that every refusal wraps ErrMalformed, for
// strings cut or badly escaped and for bytes after the row.
func TestDecodeMalformed(t *testing.T) {
	type row struct {
		S string
		B []byte
	}
	c, err := New(reflect.TypeFor[row]())
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"escape then cut":    "6100ff",
		"bad escape":         "6100020001" + "00",
		"missing presence":   "0001",
		"bad presence":       "0001" + "02",
		"bytes unterminated": "0001" + "01" + "61",
		"trailing":           "0001" + "00" + "00",
	} {
		b, _ := hex.DecodeString(src)
		err := c.Decode(b, reflect.New(c.Type()).Elem())
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s (%s): %v, want ErrMalformed", name, src, err)
		}
	}
}

// TestNewRefuses checks that New names the field that has no deterministic
// form.
func TestNewRefuses(t *testing.T) {
	type complexField struct{ Z complex64 }
	type deep struct{ In []struct{ M map[int]int } }
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[complexField](), "complexField.Z"},
		{reflect.TypeFor[deep](), "deep.In[].M"},
		{reflect.TypeFor[*deep](), "writes structs"},
	} {
		if _, err := New(tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error naming %s", tc.t, err, tc.want)
		}
	}
}

// FuzzDecode checks that Decode never panics on nested optional and
// repeated values, and that what it accepts encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	type leaf struct {
		K [2]byte
		V *float32
	}
	type tree struct {
		Leaves [][]byte
		Kids   []*leaf
		Flag   bool
	}
	c, err := New(reflect.TypeFor[tree]())
	if err != nil {
		f.Fatal(err)
	}
	v := float32(-2)
	seed, err := c.Append(nil, reflect.ValueOf(tree{Leaves: [][]byte{nil, {0}}, Kids: []*leaf{{K: [2]byte{1, 2}, V: &v}, nil}}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		out := reflect.New(c.Type()).Elem()
		if c.Decode(b, out) != nil {
			return
		}
		again, err := c.Append(nil, out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to a row that encodes to %x", b, again)
		}
	})
}
