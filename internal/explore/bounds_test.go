package explore

import (
	"os"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/s3fault"
	"github.com/s3once/s3once/internal/s3mem"
)

// wide tells whether make explore runs the tests (S3ONCE_EXPLORE=wide): the
// wider bounds, two faults per schedule.
func wide() bool { return os.Getenv("S3ONCE_EXPLORE") == "wide" }

// TestExploreIssue explores IssueWorkload (two files, a rollback, a
// duplicate commit) with at most one fault per schedule: in make test, a
// crash after the server applied each completion and abort (the calls the
// commits, the rollback and the duplicate turn on), order First; in make
// explore, every fate at every release, orders First and Alternate.
// One schedule of this workload costs about 4 s of CPU with -race, so make
// test takes the calls that matter, and make explore the rest.
func TestExploreIssue(t *testing.T) {
	start := time.Now()
	b := Bounds{Faults: []s3mem.Kind{s3mem.CrashAfterApply}, Ops: []s3mem.Op{s3fault.CompleteMultipartUpload, s3fault.AbortMultipartUpload}}
	if wide() {
		b = Bounds{Faults: s3mem.Kinds, Orders: []Order{First, Alternate}}
	}
	results := Explore(t, IssueWorkload(), b)
	// The fault-free schedule: both files committed, the first written
	// again after the rollback, the second committed twice at once.
	if base := results[0]; len(base.Errors) > 0 || base.Rewrites != 1 || base.Attempts != 2 {
		t.Errorf("fault-free: want no error, one rewrite, two attempts:\n%s", base)
	}
	report(t, "issue", b, results, start, true)
}

// TestExploreTwoFaults (make explore only): two faults per schedule on the
// one-file workload: a first fault of every fate at every release, then a
// crash before sending at every later release of the schedule the first
// fault made, order First.
func TestExploreTwoFaults(t *testing.T) {
	if !wide() {
		t.Skip("two faults per schedule: make explore (S3ONCE_EXPLORE=wide)")
	}
	start := time.Now()
	b := Bounds{Faults: s3mem.Kinds, Second: []s3mem.Kind{s3mem.CrashBeforeSend}}
	report(t, "one", b, Explore(t, DefaultStream(), b), start, true)
}
