package sink

import (
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
)

// TestPackable: Encode packs records only in the global window under the
// default trigger; other windows, and any trigger (which might count
// elements), keep one record per element.
func TestPackable(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []string{"a"})
	if !packable(col) {
		t.Error("global window, default trigger: not packed")
	}
	cases := map[string]beam.PCollection{
		"fixed":    beam.WindowInto(s, window.NewFixedWindows(time.Minute), col),
		"sliding":  beam.WindowInto(s, window.NewSlidingWindows(time.Minute, 3*time.Minute), col),
		"sessions": beam.WindowInto(s, window.NewSessions(time.Minute), col),
		"global, AfterCount": beam.WindowInto(s, window.NewGlobalWindows(), col,
			beam.Trigger(trigger.Repeat(trigger.AfterCount(50))), beam.PanesDiscard()),
		"global, AfterProcessingTime": beam.WindowInto(s, window.NewGlobalWindows(), col,
			beam.Trigger(trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(time.Minute))), beam.PanesDiscard()),
	}
	for name, c := range cases {
		if packable(c) {
			t.Errorf("%s: packed", name)
		}
	}
}
