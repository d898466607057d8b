package s3call

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	awsmiddle "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/s3once/s3once/errcode"
)

// DefaultThrottleBudget is how long a call may go on being answered
// SlowDown before it fails with ErrThrottled, unless the caller sets
// another budget.
const DefaultThrottleBudget = 5 * time.Minute

// The backoff of a lane (one bucket and prefix) after SlowDown answers:
// the first answer makes every call of the lane wait about
// throttleMinDelay, each answer to a request sent after the last wait
// began doubles the wait, up to throttleMaxDelay, and each success halves
// it again, so the rate comes back gradually. throttleMaxDelay stays well
// under BaseCallTimeout: a wait happens inside an attempt's bound.
const (
	throttleMinDelay = 200 * time.Millisecond
	throttleMaxDelay = 5 * time.Second
)

// ErrThrottled: S3 answered a call SlowDown (or another throttling code)
// for longer than its throttle budget. Nothing a checkpoint references is
// lost: the run can be repeated once the request rate is lower.
var ErrThrottled = errcode.New(errcode.Throttled, "S3 answered SlowDown for longer than the call's throttle budget")

// ThrottledError is the error of a call that ran out of its throttle
// budget. It names the call's target and says what to do; errors.Is(err,
// ErrThrottled) holds for it, and its message carries ErrThrottled's code.
type ThrottledError struct {
	// Op is the S3 operation ("UploadPart", "PutObject", ...).
	Op string
	// Bucket and Key are the call's target; UploadID its multipart
	// upload, if any.
	Bucket, Key, UploadID string
	// Budget is the budget that ran out; Answers the SlowDown answers
	// the call got within it; Throttled the time from the first of them
	// to the last, which is at least Budget.
	Budget    time.Duration
	Answers   int
	Throttled time.Duration
	// Err is the last throttling answer.
	Err error
}

func (e *ThrottledError) Error() string {
	target := "s3://" + e.Bucket + "/" + e.Key
	if e.UploadID != "" {
		target += " (upload " + e.UploadID + ")"
	}
	return fmt.Sprintf("%s %s: %s: %d SlowDown answers over %v, throttled past its budget of %v; nothing a checkpoint references is lost: run the pipeline again to resume "+
		"once fewer requests reach this prefix (fewer shards or workers, larger parts), or raise ThrottleBudget: %v",
		e.Op, target, ErrThrottled, e.Answers, e.Throttled.Round(time.Millisecond), e.Budget, e.Err)
}

// Unwrap gives ErrThrottled and the last answer.
func (e *ThrottledError) Unwrap() []error { return []error{ErrThrottled, e.Err} }

// ThrottleStats are a Throttle's counters since it was made.
type ThrottleStats struct {
	// Answers counts the throttling answers (SlowDown, 429, ...) the
	// client received, every attempt included.
	Answers int64
	// Calls counts the calls made under a Policy that got at least one
	// throttling answer; Exhausted those of them that ran out of their
	// budget and failed with ErrThrottled.
	Calls, Exhausted int64
	// Waited is the time requests spent held back by a lane's backoff
	// before they were sent, summed over the requests.
	Waited time.Duration
}

// Sub returns the counts of s since earlier.
func (s ThrottleStats) Sub(earlier ThrottleStats) ThrottleStats {
	return ThrottleStats{Answers: s.Answers - earlier.Answers, Calls: s.Calls - earlier.Calls,
		Exhausted: s.Exhausted - earlier.Exhausted, Waited: s.Waited - earlier.Waited}
}

// Throttle is the backoff that all calls of one client share while S3
// throttles them. S3 limits request rates per partitioned prefix, so the
// backoff is kept per lane: a bucket and the folder of the call's key (the
// key up to its last slash). A SlowDown answer slows every call of its lane
// in the process, not only the one that got it; other lanes go on at full
// speed.
//
// Under a Policy (Do) a throttling answer is not an attempt: Do sends the
// call again, after the lane's wait, until the call has been answered
// SlowDown for Budget, then fails it with a *ThrottledError. Calls outside a
// Policy leave throttling answers to the SDK's retryer, with the lane's
// wait before each attempt. NewClient installs a Throttle on every client;
// the client's retryer has no retry quota (see NewClient), so nothing but
// the budget ends a throttled call.
type Throttle struct {
	budget time.Duration

	mu    sync.Mutex
	lanes map[string]*lane

	answers, calls, exhausted, waited atomic.Int64
}

// maxIdleLanes bounds how many lanes a Throttle keeps: beyond it, lanes
// that hold no backoff are forgotten (a long streaming run writes to ever
// new folders).
const maxIdleLanes = 4096

// NewThrottle returns a Throttle whose calls fail after budget of SlowDown
// answers (DefaultThrottleBudget when budget <= 0).
func NewThrottle(budget time.Duration) *Throttle {
	if budget <= 0 {
		budget = DefaultThrottleBudget
	}
	return &Throttle{budget: budget, lanes: map[string]*lane{}}
}

// Budget is the time a call may be throttled before it fails.
func (t *Throttle) Budget() time.Duration { return t.budget }

// Stats returns the counters.
func (t *Throttle) Stats() ThrottleStats {
	return ThrottleStats{Answers: t.answers.Load(), Calls: t.calls.Load(), Exhausted: t.exhausted.Load(),
		Waited: time.Duration(t.waited.Load())}
}

func (t *Throttle) lane(key string) *lane {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.lanes[key]; ok {
		return l
	}
	if len(t.lanes) >= maxIdleLanes {
		now := time.Now()
		for k, l := range t.lanes {
			if l.idle(now) {
				delete(t.lanes, k)
			}
		}
	}
	l := &lane{}
	t.lanes[key] = l
	return l
}

// lane is the backoff of one bucket and prefix.
type lane struct {
	mu    sync.Mutex
	delay time.Duration // the current step; 0 when not throttled
	until time.Time     // no request of the lane is sent before
	gen   uint64        // counts the steps taken
}

// admit returns how long a request must wait before it is sent, and the
// step it is sent under. While the lane backs off, each request adds a
// jitter of its own of up to one step, so that the requests held back
// together spread over a step rather than all going at the same instant
// (none without jitter: see WithoutJitter).
func (l *lane) admit(now time.Time, jitter bool) (time.Duration, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.until.Sub(now)
	if l.delay > 0 && jitter {
		d = max(d, 0) + rand.N(l.delay+1)
	}
	return max(d, 0), l.gen
}

// slowDown notes a throttling answer to a request sent under step gen. The
// first such answer of a step takes the next step: the wait doubles and
// starts now. Answers to requests that were sent under an older step were
// in flight before the lane backed off, and change nothing.
func (l *lane) slowDown(now time.Time, gen uint64, jitter bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	l.gen++
	l.delay = min(max(2*l.delay, throttleMinDelay), throttleMaxDelay)
	// A wait in [delay/2, delay]: full jitter within the upper half (the
	// whole step without jitter).
	wait := l.delay
	if jitter {
		wait = l.delay/2 + rand.N(l.delay/2+1)
	}
	until := now.Add(wait)
	if until.After(l.until) {
		l.until = until
	}
}

// ok notes a successful answer: the wait halves, down to none.
func (l *lane) ok() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.delay /= 2; l.delay < throttleMinDelay {
		l.delay = 0
	}
}

func (l *lane) idle(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay == 0 && !l.until.After(now)
}

// target is what a call names: its bucket, key and upload.
type target struct {
	Bucket, Key, UploadID string
}

// laneKey is the target's bucket and the folder of its key.
func (tg target) laneKey() string {
	dir := path.Dir(tg.Key)
	if dir == "." {
		dir = ""
	}
	return tg.Bucket + "/" + dir
}

// targetOf reads the Bucket, Key and UploadId fields of an operation's
// input, those of them it has.
func targetOf(params any) target {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return target{}
	}
	v = v.Elem()
	str := func(name string) string {
		f := v.FieldByName(name)
		if f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String {
			return f.Elem().String()
		}
		return ""
	}
	return target{Bucket: str("Bucket"), Key: str("Key"), UploadID: str("UploadId")}
}

type targetKey struct{}

// underPolicyKey marks a call made by Do, which handles throttling answers
// itself.
type underPolicyKey struct{}

// throttleAnswer is a throttling answer to a call made under a Policy: the
// SDK's retryer does not retry it (see NewClient), and Do sends the call
// again within the budget.
type throttleAnswer struct {
	throttle *Throttle
	op       string
	target   target
	err      error
}

func (a *throttleAnswer) Error() string { return a.err.Error() }
func (a *throttleAnswer) Unwrap() error { return a.err }

// exhausted is the error of the call once its budget ran out.
func (a *throttleAnswer) exhausted(answers int, throttled time.Duration) error {
	a.throttle.exhausted.Add(1)
	return &ThrottledError{Op: a.op, Bucket: a.target.Bucket, Key: a.target.Key, UploadID: a.target.UploadID,
		Budget: a.throttle.budget, Answers: answers, Throttled: throttled, Err: a.err}
}

// isThrottleAnswer reports whether err is an answer that asks the client
// to slow down.
func isThrottleAnswer(err error) bool {
	switch APICode(err) {
	case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
		"RequestThrottled", "RequestThrottledException", "ThrottledException":
		return true
	}
	return HTTPStatus(err) == 429
}

// Apply puts t on a client's options, as NewClient does for every client:
// its middlewares, and the retryer described at newRetryer, with
// o.RetryMaxAttempts attempts (the SDK's default when 0). For clients built
// without NewClient (the in-memory S3's).
func (t *Throttle) Apply(o *s3.Options) {
	o.Retryer = newRetryer(o.RetryMaxAttempts)
	o.APIOptions = append(o.APIOptions, t.install)
}

// install adds the throttle's middlewares to a client's stack: one that
// notes each call's target, and one inside the retryer's loop that holds
// each request back while its lane waits and notes each answer.
func (t *Throttle) install(stack *middleware.Stack) error {
	noteTarget := middleware.InitializeMiddlewareFunc("S3onceThrottleTarget",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, targetKey{}, targetOf(in.Parameters)), in)
		})
	if err := stack.Initialize.Add(noteTarget, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("S3onceThrottle", t.handleAttempt), "Retry", middleware.After)
}

func (t *Throttle) handleAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	tg, _ := ctx.Value(targetKey{}).(target)
	l := t.lane(tg.laneKey())
	jitter := ctx.Value(noJitterKey{}) == nil
	var gen uint64
	if !mutNoThrottleBackoff() {
		var wait time.Duration
		wait, gen = l.admit(time.Now(), jitter)
		if wait > 0 {
			began := time.Now()
			err := Sleep(ctx, wait)
			t.waited.Add(int64(time.Since(began)))
			if err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
		}
	}
	out, md, err := next.HandleFinalize(ctx, in)
	switch {
	case err == nil:
		l.ok()
		return out, md, nil
	case !isThrottleAnswer(err):
		return out, md, err
	}
	t.answers.Add(1)
	if mutNoThrottleBackoff() {
		return out, md, err
	}
	l.slowDown(time.Now(), gen, jitter)
	if ctx.Value(underPolicyKey{}) == nil {
		return out, md, err
	}
	return out, md, &throttleAnswer{throttle: t, op: awsmiddle.GetOperationName(ctx), target: tg, err: err}
}

// throttledCall is Do's account of one call's throttling answers.
type throttledCall struct {
	first   time.Time
	answers int
}

// note takes a failed attempt's error. It reports whether the error was a
// throttling answer within the call's budget (Do sends the call again
// without counting an attempt), or returns the call's final error when the
// budget has run out.
func (c *throttledCall) note(err error) (again bool, final error) {
	var a *throttleAnswer
	if !errors.As(err, &a) {
		return false, nil
	}
	now := time.Now()
	if c.first.IsZero() {
		c.first = now
		a.throttle.calls.Add(1)
	}
	c.answers++
	if d := now.Sub(c.first); d >= a.throttle.budget {
		return false, a.exhausted(c.answers, d)
	}
	return true, nil
}
