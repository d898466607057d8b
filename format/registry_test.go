package format

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func init() {
	Register("test-orders-csv", CSV{Header: []string{"id", "total"}})
	RegisterCodec("test-gzip-fast", Gzip{Level: 1})
}

// TestBuiltInNames: the built-in formats and codecs are registered under
// their documented names, and a program's own registrations are found.
func TestBuiltInNames(t *testing.T) {
	for name, want := range map[string]Format{"text": textFormat{}, "jsonl": jsonLinesFormat{}, "csv": CSV{}} {
		if f, err := Lookup(name); err != nil || !reflect.DeepEqual(f, want) {
			t.Errorf("Lookup(%q) = %#v, %v; want %#v", name, f, err, want)
		}
	}
	for name, want := range map[string]Codec{"none": noCompression{}, "gzip": Gzip{}, "zstd": Zstd{}} {
		if c, err := LookupCodec(name); err != nil || c != want {
			t.Errorf("LookupCodec(%q) = %#v, %v; want %#v", name, c, err, want)
		}
	}
	if f, err := Lookup("test-orders-csv"); err != nil || string(f.(FileHeader).FileHeader()) != "id,total\n" {
		t.Errorf("Lookup of a program's CSV = %#v, %v", f, err)
	}
	if c, err := LookupCodec("test-gzip-fast"); err != nil || c != (Gzip{Level: 1}) {
		t.Errorf("LookupCodec of a program's codec = %#v, %v", c, err)
	}
}

// TestUnknownName: looking up a name nobody registered says which Config
// field named it, lists the registered names, and names the function that
// registers another.
func TestUnknownName(t *testing.T) {
	_, err := Lookup("avro")
	if err == nil {
		t.Fatal(`Lookup("avro") found a format`)
	}
	for _, want := range []string{`unknown Format "avro" in Config.Format`, `"csv"`, `"jsonl"`, `"text"`, `"test-orders-csv"`,
		"register others with format.Register in an init function"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup error %q does not say %q", err, want)
		}
	}
	_, err = LookupCodec("lzma")
	if err == nil {
		t.Fatal(`LookupCodec("lzma") found a codec`)
	}
	for _, want := range []string{`unknown Compression "lzma" in Config.Compression`, `"gzip"`, `"none"`, `"zstd"`, `"test-gzip-fast"`,
		"register others with format.RegisterCodec in an init function"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("LookupCodec error %q does not say %q", err, want)
		}
	}
}

// panicOf returns what f panics with, or nil.
func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestRegisterRefuses: an empty name, a nil implementation and a name taken
// are a program's set-up errors, refused by a panic that names the function,
// and leave the registered one in place.
func TestRegisterRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		reg  func()
		want string
	}{
		{"empty format name", func() { Register("", CSV{}) }, "format.Register: empty name or nil format"},
		{"nil format", func() { Register("test-nil", nil) }, "format.Register: empty name or nil format"},
		{"format name taken", func() { Register("text", CSV{}) }, `format.Register: format "text" registered twice`},
		{"empty codec name", func() { RegisterCodec("", Gzip{}) }, "format.RegisterCodec: empty name or nil codec"},
		{"nil codec", func() { RegisterCodec("test-nil", nil) }, "format.RegisterCodec: empty name or nil codec"},
		{"codec name taken", func() { RegisterCodec("gzip", Zstd{}) }, `format.RegisterCodec: codec "gzip" registered twice`},
	} {
		if got := fmt.Sprint(panicOf(c.reg)); got != c.want {
			t.Errorf("%s: panic %q, want %q", c.name, got, c.want)
		}
	}
	if f, err := Lookup("text"); err != nil || f != (textFormat{}) {
		t.Errorf("after a refused registration, text is %#v, %v", f, err)
	}
	if c, err := LookupCodec("gzip"); err != nil || c != (Gzip{}) {
		t.Errorf("after a refused registration, gzip is %#v, %v", c, err)
	}
	if _, err := Lookup("test-nil"); err == nil {
		t.Error("a nil format was registered")
	}
}
