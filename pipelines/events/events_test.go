package events

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func TestCheck(t *testing.T) {
	_, err := Options{Records: 0, Window: time.Millisecond, Span: -time.Second}.Check()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"records 0", "span -1s", "window 1ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	o, err := Options{Live: 3 * time.Second}.Check()
	if err != nil || o.Window != 10*time.Second || o.Tick != time.Second || o.PerTick != 500 {
		t.Errorf("live defaults: %+v, %v", o, err)
	}
	if _, err := (Options{Live: time.Second, Tick: 2 * time.Second}).Check(); err == nil {
		t.Error("a tick longer than the live time was accepted")
	}
}

func TestGeneratedEventsStayInTheirSpan(t *testing.T) {
	start := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	f := &generateFn{Records: 3000, Seed: 3, StartMillis: start.UnixMilli(), SpanMillis: time.Hour.Milliseconds()}
	var n int
	err := f.ProcessElement(context.Background(), 2000, func(ts beam.EventTime, e Event) {
		n++
		if !ts.ToTime().Equal(e.Time) || e.Time.Before(start) || !e.Time.Before(start.Add(time.Hour)) {
			t.Fatalf("event %+v stamped %v", e, ts.ToTime())
		}
		if !strings.HasPrefix(Destination(e), "kind=") {
			t.Fatalf("destination %q", Destination(e))
		}
	})
	if err != nil || n != 1000 {
		t.Fatalf("%d events, %v", n, err)
	}
}
