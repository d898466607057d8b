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
// processes are never taken back, so when the set is full the oldest token
// is forgotten (its resume, if it ever comes here, then counts as a
// recovery). A self-checkpoint's residual comes back within ResumeDelay,
// long before maxHandedOver later hand-overs push it out.
const maxHandedOver = 1 << 16

type tokenID struct {
	upload string
	seq    uint64
}

// handedOver is the set of tokens handed over and not yet taken back, with
// the order they were handed over in.
var handedOver = newTokenSet(maxHandedOver)

// tokenSet is a set of at most max token ids that forgets the oldest id
// to make room for a new one.
type tokenSet struct {
	mu   sync.Mutex
	max  int
	ids  map[tokenID]struct{}
	ring []tokenID // insertion order; may name ids already taken back
	next int       // where the next id goes in ring, once it is full
}

func newTokenSet(max int) *tokenSet {
	return &tokenSet{max: max, ids: map[tokenID]struct{}{}}
}

func (s *tokenSet) add(id tokenID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) < s.max {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % s.max
	}
	s.ids[id] = struct{}{}
}

// take reports whether id is in the set, and removes it.
func (s *tokenSet) take(id tokenID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	delete(s.ids, id)
	return ok
}

// handOver notes a token given to the runner at a self-checkpoint.
func handOver(rr recoverable.ResumeToken) {
	handedOver.add(tokenID{rr.UploadID, rr.Seq})
}

// takeBack reports whether rr is a token this process handed over at a
// self-checkpoint, and forgets it.
func takeBack(rr recoverable.ResumeToken) bool {
	return handedOver.take(tokenID{rr.UploadID, rr.Seq})
}
