package main

import (
	"strings"
	"testing"
)

// TestSummaryInTurns checks the summary line of a ratio measured in turns:
// the median of the runs' values with the sign test's interval, met only
// when the whole interval clears the goal.
func TestSummaryInTurns(t *testing.T) {
	line := func(values []float64) string {
		t.Helper()
		samples := map[string]map[string][]float64{
			"BenchmarkUploadInTurns/size=64MiB": {"stream/ceiling": values},
		}
		for l := range strings.Lines(summary(samples)) {
			if strings.HasPrefix(l, "| Stream vs ceiling in turns, 64MiB") {
				return l
			}
		}
		t.Fatalf("no line for the check in:\n%s", summary(samples))
		return ""
	}
	// Twelve runs: the interval is the 3rd to the 10th value.
	clears := []float64{0.99, 0.97, 0.96, 0.98, 1.00, 0.955, 0.97, 0.985, 0.99, 0.97, 0.93, 0.94}
	got := line(clears)
	for _, want := range []string{"| 12 |", "0.970 (median stream/ceiling)", "[0.955, 0.990]", "96.1%", "| yes |"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
	// The same median, but a third value under the goal: not met.
	misses := append([]float64(nil), clears...)
	misses[2] = 0.945 // the 3rd smallest is now 0.945
	if got := line(misses); !strings.Contains(got, "[0.945, 0.990]") || !strings.Contains(got, "| **no** |") {
		t.Errorf("line %q: want [0.945, 0.990] and not met", got)
	}
}
