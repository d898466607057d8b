package sink

import (
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/recoverable"
)

// A resumed file is either the writer carrying on after its own
// self-checkpoint (routine: the runner hands back the residual it was given)
// or a recovery from a token this process did not just hand over (a worker
// died, the runner restored a checkpoint, or another worker took the
// residual). The two are counted apart, so that a run in which nothing
// failed does not read like one full of crash recoveries: the process keeps
// the identity (upload and persist number) of each token it handed to the
// runner at a self-checkpoint, and a resume that finds its token there is a
// self-checkpoint resume ("self_checkpoint_resumes"); any other is counted in
// "tails_recovered" (when it has a tail) and "recoveries".
var (
	metricSelfResumes = beam.NewCounter("s3once", "self_checkpoint_resumes")
	metricRecoveries  = beam.NewCounter("s3once", "recoveries")
)

// maxHandedOver bounds the tokens remembered: residuals resumed by other
// processes are never taken back, so the set is cleared when it is full
// (their resumes then count as recoveries, which is what they are there).
const maxHandedOver = 1 << 16

type tokenID struct {
	upload string
	seq    uint64
}

var (
	handedOverMu sync.Mutex
	handedOver   = map[tokenID]struct{}{}
)

// handOver notes a token given to the runner at a self-checkpoint.
func handOver(rr recoverable.ResumeToken) {
	handedOverMu.Lock()
	defer handedOverMu.Unlock()
	if len(handedOver) >= maxHandedOver {
		clear(handedOver)
	}
	handedOver[tokenID{rr.UploadID, rr.Seq}] = struct{}{}
}

// takeBack reports whether rr is a token this process handed over at a
// self-checkpoint, and forgets it.
func takeBack(rr recoverable.ResumeToken) bool {
	handedOverMu.Lock()
	defer handedOverMu.Unlock()
	id := tokenID{rr.UploadID, rr.Seq}
	_, ok := handedOver[id]
	delete(handedOver, id)
	return ok
}
