package s3mem

import (
	"errors"
	"fmt"

	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// Op names an S3 operation. The operations s3once calls are listed once,
// in internal/testkit/s3fault (s3fault.Ops, s3fault.PutObject, ...); the Fake serves
// those, and the bucket calls below that tests make.
type Op = s3fault.Op

// The operations the Fake serves beyond s3fault.Ops. Anything else gets 501
// NotImplemented and is logged as Unsupported.
const (
	CreateBucket Op = "CreateBucket"
	HeadBucket   Op = "HeadBucket"
	Unsupported  Op = "Unsupported"
)

// Kind is what a fault does to a request.
type Kind int

// The faults. A crash is final: the client is marked dead (see Fake.Crash).
const (
	// CrashBeforeSend: the client dies before the request leaves; the server
	// sees nothing.
	CrashBeforeSend Kind = iota + 1
	// CrashAfterApply: the server applies the request, then the client dies
	// before the reply arrives.
	CrashAfterApply
	// InternalError: the server answers 500 InternalError, unapplied.
	InternalError
	// SlowDown: the server answers 503 SlowDown, unapplied.
	SlowDown
	// Hang: the request is never answered (nor applied); it returns when its
	// context is done, with the context's error.
	Hang
	// HangAfterApply: the server applies the request, and the reply never
	// comes; it returns when its context is done.
	HangAfterApply
	// Conflict: the server answers 409 ConditionalRequestConflict, unapplied,
	// as S3 does when another conditional write of the key is in flight.
	Conflict
	// Late: the server answers 500 InternalError without applying the
	// request, then applies it after all, right after the next PutObject of
	// the same client that it applies: a request that stalled inside the
	// server and landed behind a newer one. Its reply is the 500.
	Late
	// CrashLagged: as CrashAfterApply, and a completion (the only call it
	// changes) makes its object visible only Options.VisibleLag after it
	// removed the upload, as servers drop an upload before its object shows:
	// meanwhile the upload is gone and the key reads empty.
	CrashLagged
)

// Kinds lists every fault.
var Kinds = []Kind{CrashBeforeSend, CrashAfterApply, InternalError, SlowDown, Hang, HangAfterApply, Conflict, Late, CrashLagged}

func (k Kind) String() string {
	switch k {
	case CrashBeforeSend:
		return "crash-before-send"
	case CrashAfterApply:
		return "crash-after-apply"
	case InternalError:
		return "internal-error"
	case SlowDown:
		return "slowdown"
	case Hang:
		return "hang"
	case HangAfterApply:
		return "hang-after-apply"
	case Conflict:
		return "conflict"
	case Late:
		return "late"
	case CrashLagged:
		return "crash-lagged"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Applied reports whether the server carries out a request that meets k.
func (k Kind) Applied() bool { return k == CrashAfterApply || k == HangAfterApply || k == CrashLagged }

// Fault is one fault rule: which requests it matches, and what it does. Empty
// or zero match fields match anything.
type Fault struct {
	Op     Op
	Client string
	Key    string
	// Part matches UploadPart's part number.
	Part int32
	// Attempt matches the SDK's attempt number of the call (1 for the first
	// try, 2 for the first retry, ...), from its amz-sdk-request header.
	Attempt int
	// Skip lets this many matching requests through before the rule fires.
	Skip int
	// Times is how often the rule fires; 0 means once, negative always.
	Times int
	Kind  Kind
}

// faultRule is a Fault with its counters.
type faultRule struct {
	Fault
	seen, fired int
}

// Inject adds a fault rule. Rules are tried in the order they were added;
// the first one that fires decides.
func (f *Fake) Inject(ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &faultRule{Fault: ft})
}

// ClearFaults removes every fault rule.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// pickFault returns the fault for c, if one fires, under f.mu.
func (f *Fake) pickFault(c Call) Kind {
	for _, r := range f.faults {
		if r.Op != "" && r.Op != c.Op || r.Client != "" && r.Client != c.Client ||
			r.Key != "" && r.Key != c.Key || r.Part != 0 && r.Part != c.Part ||
			r.Attempt != 0 && r.Attempt != c.Attempt {
			continue
		}
		r.seen++
		if r.seen <= r.Skip {
			continue
		}
		limit := r.Times
		if limit == 0 {
			limit = 1
		}
		if limit > 0 && r.fired >= limit {
			continue
		}
		r.fired++
		return r.Kind
	}
	return 0
}

// Call is one request as the Fake saw it: what the fault rules and Gate
// match on, and what the log keeps.
type Call struct {
	// Seq numbers the Fake's requests from 1, in arrival order.
	Seq int
	// N numbers the requests of this operation from 1.
	N      int
	Client string
	Op     Op
	Bucket string
	Key    string
	// UploadID and Part are set for the calls that name them.
	UploadID string
	Part     int32
	// Attempt is the SDK's attempt number (0 if the header is missing).
	Attempt int
	// Fault is the fault that fired (0 for none).
	Fault Kind
	// Status is the HTTP status the server answered with (0 when it never
	// answered: a crash before sending, a dead client, a hang).
	Status int
	// Code is the S3 error code of the answer, if any.
	Code string
	// Applied tells whether the request changed (or read) the server's state.
	Applied bool
	// Dead: the client was already crashed; the request went nowhere.
	Dead bool
}

// ErrCrashed is the error every request of a crashed client fails with. The
// SDK's retryer does not retry it.
var ErrCrashed = errors.New("s3mem: the client crashed")

// crashError is what the transport returns for a crashed client: marked not
// retryable, so the SDK gives up at once, as a dead process would.
type crashError struct{ client string }

func (e *crashError) Error() string {
	return fmt.Sprintf("s3mem: client %s crashed; its requests go nowhere", e.client)
}
func (e *crashError) Unwrap() error        { return ErrCrashed }
func (e *crashError) RetryableError() bool { return false }
