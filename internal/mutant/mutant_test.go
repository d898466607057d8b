package mutant

import "testing"

// TestParse: every bug reads back from its name, lists combine, and a name
// that is no bug is refused.
func TestParse(t *testing.T) {
	for _, b := range All {
		got, err := Parse(b.String())
		if err != nil || got != b {
			t.Errorf("Parse(%q) = %v, %v; want %v", b.String(), got, err, b)
		}
	}
	got, err := Parse(" drop-tail, short-settle ,")
	if err != nil || got != DropTail|ShortSettle {
		t.Errorf("Parse of a list = %v, %v", got, err)
	}
	if got, err := Parse(""); err != nil || got != 0 {
		t.Errorf("Parse(\"\") = %v, %v", got, err)
	}
	if _, err := Parse("drop-tial"); err == nil {
		t.Error("Parse accepted an unknown name")
	}
}
