package harness

import (
	"strings"
	"testing"
	"time"
)

// A line when the count changes, and at least one every progressQuietAt
// while it does not.
func TestProgressLineNeverSilentForLong(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := progressLine{lastAt: t0}
	steps := []struct {
		at    time.Duration
		files int
		want  bool
	}{
		{5 * time.Second, 0, false},
		{10 * time.Second, 2, true},
		{15 * time.Second, 2, false},
		{39 * time.Second, 2, false},
		{40 * time.Second, 2, true},
		{45 * time.Second, 3, true},
	}
	for _, s := range steps {
		line, ok := p.next("streaming", s.files, int64(s.files)*1024, s.at, t0.Add(s.at))
		if ok != s.want {
			t.Errorf("at %v with %d files: line %v, want %v", s.at, s.files, ok, s.want)
		}
		if ok && !strings.Contains(line, "s3once streaming: "+s.at.String()+": ") {
			t.Errorf("line %q", line)
		}
	}
}
