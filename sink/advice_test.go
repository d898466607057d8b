package sink

import (
	"strings"
	"testing"
)

// A changed run in an Iceberg table's run folder is told to take a new run
// id (its user picks the run id, not the Prefix); any other folder, to
// write to a fresh Prefix.
func TestFreshPrefixAdvice(t *testing.T) {
	for _, c := range []struct {
		prefix string
		table  bool
	}{
		{"lake/events/data/2026-12-05", true},
		{"data/run-7", true},
		{"warehouse/lake.db/events/data/r1/", true},
		{"corpus", false},
		{"data", false},
		{"lake/events/data", false},
		{"metadata/run-7", false},
		{"", false},
	} {
		got := freshPrefix(c.prefix)
		if table := strings.HasPrefix(got, "give this run a new run id"); table != c.table {
			t.Errorf("freshPrefix(%q) = %q, want the run-id advice: %v", c.prefix, got, c.table)
		}
		if !strings.Contains(got, "fresh Prefix") {
			t.Errorf("freshPrefix(%q) = %q: a folder of plain files is told to write to a fresh Prefix either way", c.prefix, got)
		}
	}
}
