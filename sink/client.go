package sink

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
)

// A worker's DoFns share one S3 client and one committer per connection
// settings: connections are reused, and the committer probes each bucket for
// conditional writes once per process rather than once per DoFn instance.
var (
	workersMu sync.Mutex
	workers   = map[connection]*worker{}
)

// connection is the part of the settings that makes a client.
type connection struct {
	Endpoint, Region                           string
	PathStyle, DisableChecksums                bool
	AccessKeyID, SecretAccessKey, SessionToken string
	MaxAttempts                                int
	ThrottleBudget                             time.Duration
	// StagingPrefix is the committer's: it cleans up only under it.
	StagingPrefix string
	// Requests fingerprints the request settings (requests.go).
	Requests string
}

type worker struct {
	client    *s3.Client
	committer *committer.Committer
	throttle  *s3call.Throttle
}

// setUp is the Setup of every DoFn that talks to S3: it hands the process's
// committer and client for the settings to ready, which keeps what the DoFn
// needs of them.
func (s settings) setUp(ctx context.Context, ready func(*committer.Committer, s3API) error) error {
	w, err := s.worker(ctx)
	if err != nil {
		return err
	}
	return ready(w.committer, w.client)
}

// worker returns the process's client and committer for the settings.
func (s settings) worker(ctx context.Context) (*worker, error) {
	key := connection{
		Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle, DisableChecksums: s.DisableChecksums,
		AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		MaxAttempts: s.MaxAttempts, ThrottleBudget: s.ThrottleBudget, StagingPrefix: s.StagingPrefix, Requests: s.Requests.fingerprint(),
	}
	workersMu.Lock()
	defer workersMu.Unlock()
	if w, ok := workers[key]; ok {
		return w, nil
	}
	throttle := s3call.NewThrottle(s.ThrottleBudget)
	client, err := s.newClient(ctx, throttle)
	if err != nil {
		return nil, err
	}
	cm, err := committer.New(client, committer.Options{StagingPrefix: s.StagingPrefix, Versioned: s.Requests.VersionedBucket})
	if err != nil {
		return nil, fmt.Errorf("s3once sink: %w", err)
	}
	w := &worker{client: client, committer: cm, throttle: throttle}
	workers[key] = w
	return w, nil
}

// newClient builds a worker's S3 client from the settings: the AWS SDK's
// default chain, with the settings' region, endpoint, addressing and static
// credentials on top when they are set, and the request settings (bucket
// owner, encryption, object settings) on every call, and throttle's shared
// backoff and budget.
func (s settings) newClient(ctx context.Context, throttle *s3call.Throttle) (*s3.Client, error) {
	req, err := s.Requests.build()
	if err != nil {
		return nil, err
	}
	c, err := s3call.NewClient(ctx, s3call.ClientOptions{
		Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle,
		AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		MaxAttempts: s.MaxAttempts, DisableChecksums: s.DisableChecksums, Throttle: throttle,
		Options: []func(*s3.Options){req.Apply},
	})
	if err != nil {
		return nil, fmt.Errorf("s3once sink: %w", err)
	}
	return c, nil
}

// The throttling counters: calls answered SlowDown (at least once), the
// answers, the calls that ran out of their ThrottleBudget, and the time
// requests were held back by the shared backoff, in milliseconds.
var (
	metricThrottledCalls   = beam.NewCounter("s3once", "throttled_calls")
	metricSlowDownAnswers  = beam.NewCounter("s3once", "slowdown_answers")
	metricThrottledFailed  = beam.NewCounter("s3once", "throttled_failures")
	metricThrottleWaitedMs = beam.NewCounter("s3once", "throttle_wait_ms")
)

// reported is what reportThrottling has counted of each worker's throttle.
var reported = map[*s3call.Throttle]s3call.ThrottleStats{}

// reportThrottling adds to the throttling counters what the process's
// workers' throttles counted since the last report. DoFns that call S3
// report at the end of each element, so the counters follow the run.
func reportThrottling(ctx context.Context) {
	workersMu.Lock()
	var d s3call.ThrottleStats
	for _, w := range workers {
		now := w.throttle.Stats()
		delta := now.Sub(reported[w.throttle])
		reported[w.throttle] = now
		d.Answers, d.Calls, d.Exhausted, d.Waited = d.Answers+delta.Answers, d.Calls+delta.Calls, d.Exhausted+delta.Exhausted, d.Waited+delta.Waited
	}
	workersMu.Unlock()
	if d.Answers == 0 && d.Calls == 0 && d.Exhausted == 0 && d.Waited == 0 {
		return
	}
	metricThrottledCalls.Inc(ctx, d.Calls)
	metricSlowDownAnswers.Inc(ctx, d.Answers)
	metricThrottledFailed.Inc(ctx, d.Exhausted)
	metricThrottleWaitedMs.Inc(ctx, d.Waited.Milliseconds())
}
