package format

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// order is a struct element with JSON tags, as a program writes them.
type order struct {
	ID      int    `json:"id"`
	Country string `json:"country"`
	Note    string `json:"note"`
}

type csvRow struct {
	Name  string
	Count int
	Ratio float64
	OK    bool
	At    time.Time
	skip  int
}

type point struct{ X, Y int }

func (p point) CSVRecord() []string { return []string{"p", strings.Repeat("*", p.X)} }

func TestFormats(t *testing.T) {
	at := time.Date(2024, 6, 1, 10, 0, 0, 5, time.FixedZone("x", 3600))
	cases := []struct {
		f    Format
		elem any
		want string
	}{
		{textFormat{}, "hello", "hello\n"},
		{textFormat{}, []byte("bytes"), "bytes\n"},
		{jsonLinesFormat{}, map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}` + "\n"},
		{jsonLinesFormat{}, order{ID: 1, Country: "fr"}, `{"id":1,"country":"fr","note":""}` + "\n"},
		{CSV{}, []string{"a", "b,c", `d"e`}, "a,\"b,c\",\"d\"\"e\"\n"},
		{CSV{}, csvRow{Name: "n", Count: -3, Ratio: 0.5, OK: true, At: at}, "n,-3,0.5,true,2024-06-01T09:00:00.000000005Z\n"},
		{CSV{}, point{X: 2}, "p,**\n"},
		{CSV{Comma: ';'}, []string{"a", "b"}, "a;b\n"},
	}
	for _, c := range cases {
		if tc, ok := c.f.(TypeChecker); ok {
			if err := tc.CheckType(reflect.TypeOf(c.elem)); err != nil {
				t.Errorf("%T.CheckType(%T): %v", c.f, c.elem, err)
			}
		}
		got, err := c.f.Append([]byte("prefix:"), c.elem)
		if err != nil || string(got) != "prefix:"+c.want {
			t.Errorf("%T.Append(%v) = %q, %v; want %q", c.f, c.elem, got, err, c.want)
		}
	}
	if _, err := (textFormat{}).Append(nil, "two\nlines"); err == nil || !strings.Contains(err.Error(), "newline") {
		t.Errorf("a text record with a newline: %v", err)
	}
	if h := (CSV{Header: []string{"id", "total"}}).FileHeader(); string(h) != "id,total\n" {
		t.Errorf("CSV header %q", h)
	}
	if err := (CSV{Comma: '\n'}).CheckType(reflect.TypeFor[[]string]()); err == nil {
		t.Error("a newline delimiter was accepted")
	}
	if err := (CSV{}).CheckType(reflect.TypeFor[struct{ M map[string]int }]()); err == nil {
		t.Error("a map field was accepted")
	}
	if err := (jsonLinesFormat{}).CheckType(reflect.TypeFor[func()]()); err == nil {
		t.Error("a func was accepted")
	}
}
