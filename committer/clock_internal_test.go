package committer

import (
	"testing"
	"time"
)

// A reading of the server's clock tells a skew only beyond what its grain
// and its round trip leave open: clocks that may agree read as zero, however
// slow the round trip, and clocks that cannot give the least difference.
func TestClockSkewFromAReading(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, c := range []struct {
		name        string
		server      time.Duration // the time the server sent, from t0
		asked, sent time.Duration // this machine's clock around the call
		want        time.Duration
	}{
		{"the same second", 0, 0, 100 * time.Millisecond, 0},
		{"a Date trailing by two seconds", -2 * time.Second, 0, 10 * time.Millisecond, 0},
		{"a slow round trip", -2 * time.Second, -3 * time.Second, 5 * time.Second, 0},
		{"a reply stamped before a late wake-up", 0, 0, 4 * time.Second, 0},
		{"server ahead", 10 * time.Second, 0, time.Second, 9 * time.Second},
		{"server behind", -10 * time.Second, 0, time.Second, -8 * time.Second},
		{"server behind, beyond a slow round trip", -10 * time.Second, -1 * time.Second, 5 * time.Second, -7 * time.Second},
	} {
		got := serverClock{server: at(c.server), asked: at(c.asked), sent: at(c.sent)}.skew()
		if got != c.want {
			t.Errorf("%s: skew %v, want %v", c.name, got, c.want)
		}
	}
}
