package explore

import (
	"os"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/s3mem"
)

// wide tells whether make explore runs the tests (S3ONCE_EXPLORE=wide): the
// wider bounds, two faults per schedule.
func wide() bool { return os.Getenv("S3ONCE_EXPLORE") == "wide" }

// TestExploreIssue explores IssueWorkload (two files, a rollback, a
// duplicate commit) with at most one fault per schedule: in make test, a
// crash before sending or after the server applied the request at every
// release (the process dies on either side of every call), order First;
// in make explore, every fate at every release.
func TestExploreIssue(t *testing.T) {
	start := time.Now()
	b := Bounds{Faults: []s3mem.Kind{s3mem.CrashBeforeSend, s3mem.CrashAfterApply}}
	if wide() {
		b.Faults = s3mem.Kinds
	}
	report(t, "issue", b, Explore(t, IssueWorkload(), b), start)
}

// TestExploreTwoFaults (make explore only): two faults per schedule on the
// one-file workload: a first fault of every fate at every release, then a
// crash before sending or after applying at every later release of the
// schedule the first fault made, order First.
func TestExploreTwoFaults(t *testing.T) {
	if !wide() {
		t.Skip("two faults per schedule: make explore (S3ONCE_EXPLORE=wide)")
	}
	start := time.Now()
	b := Bounds{Faults: s3mem.Kinds, Second: []s3mem.Kind{s3mem.CrashBeforeSend, s3mem.CrashAfterApply}}
	report(t, "one", b, Explore(t, DefaultStream(), b), start)
}
