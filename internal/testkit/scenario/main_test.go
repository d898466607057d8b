package scenario

import (
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func init() { register.Function1x1(firstLetter) }

// firstLetter is the destination of a record: its first letter.
func firstLetter(s string) string { return "letter=" + s[:1] }

// TestMain runs the tests under Beam's test main, as prism needs, and
// stops the versitygw server if a sequence started it.
func TestMain(m *testing.M) {
	code := ptest.MainRet(m)
	if gw != nil {
		gw.Stop()
	}
	os.Exit(code)
}
