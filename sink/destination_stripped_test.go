package sink

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamruntime "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

// strippedDestination is never registered, and never resolved by name
// before TestUnregisteredDestinationInStrippedBinary.
func strippedDestination(s string) string { return "d" }

// noSymbols resolves nothing, as in a binary built with -ldflags=-s.
type noSymbols struct{}

func (noSymbols) Sym2Addr(name string) (uintptr, error) {
	return 0, errors.New(name + " not found")
}

// An unregistered Destination that the binary cannot find by name is
// refused while the pipeline is built, naming the function and the fix,
// before any runner starts.
func TestUnregisteredDestinationInStrippedBinary(t *testing.T) {
	saved := beamruntime.Resolver
	beamruntime.Resolver = noSymbols{}
	defer func() { beamruntime.Resolver = saved }()
	cfg := testConfig("bucket", "out")
	cfg.Destination = strippedDestination
	_, s := beam.NewPipelineWithRoot()
	_, err := TryWrite(s, beam.Create(s, "a"), cfg)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("TryWrite: %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"strippedDestination", "not registered", "register"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
