// Package mutant holds test-only switches that put known past bugs back
// into s3once's protocol code, so that a test can show the explorer
// (internal/explore) catches each of them. Every switch is off unless a test
// turns it on; production code only ever reads them. Being internal, the
// package is out of reach of any importer outside this module.
package mutant

import "sync/atomic"

// Bug is one past bug that can be switched back on.
type Bug uint32

// The bugs.
const (
	// AbortOn409: the committer aborts the token's own upload when
	// CompleteMultipartUpload answers 409 ConditionalRequestConflict,
	// losing the file.
	AbortOn409 Bug = 1 << iota
	// DropTail: recovery forgets the token's tail, as Flink's S3 writer did
	// on its recover-for-commit path: the bytes after the last part are lost.
	DropTail
	// ShortSettle: a commit that finds the upload gone and the key empty
	// gives up after a few seconds instead of the SettleTimeout window, and
	// calls the data lost while a completion elsewhere is still landing.
	ShortSettle
	// ReusePersistKey: a failed Persist gives its sequence number back, so
	// the next Persist writes its side object under the failed one's key,
	// where the failed PUT may still land.
	ReusePersistKey
)

// ShortSettleWindow is the settle window under ShortSettle.
const ShortSettleWindow = 5e9 // five seconds, in nanoseconds

var on atomic.Uint32

// On reports whether b is switched on.
func On(b Bug) bool { return on.Load()&uint32(b) != 0 }

// Set switches exactly the bugs in b on (0: all off) and returns a function
// that restores the previous state. Tests only.
func Set(b Bug) (restore func()) {
	prev := on.Swap(uint32(b))
	return func() { on.Store(prev) }
}

func (b Bug) String() string {
	switch b {
	case AbortOn409:
		return "abort-on-409"
	case DropTail:
		return "drop-tail"
	case ShortSettle:
		return "short-settle"
	case ReusePersistKey:
		return "reuse-persist-key"
	}
	return "bugs(mixed)"
}
