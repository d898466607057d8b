package sink

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// A worker's DoFns share one S3 client and one committer per connection
// settings: connections are reused, and the committer probes each bucket for
// conditional writes once per process rather than once per DoFn instance.
var (
	workersMu sync.Mutex
	workers   = map[workerKey]*worker{}
)

// clientOptions are the options of a client for c, with throttle's backoff
// and budget (nil for a configuration alone, see Config.AWSConfig). The
// credentials c names are read here, on the machine that makes the client
// (ErrCredentialsMissing where they are not).
func (c Connection) clientOptions(throttle *s3call.Throttle) (s3call.ClientOptions, error) {
	creds, err := c.Credentials.provider()
	if err != nil {
		return s3call.ClientOptions{}, err
	}
	return s3call.ClientOptions{
		Endpoint: c.Endpoint, Region: c.Region, PathStyle: c.PathStyle,
		Credentials: creds, CredentialsFile: c.Credentials.File, Profile: c.Credentials.Profile,
		MaxAttempts: c.MaxAttempts, DisableChecksums: c.DisableChecksums, Throttle: throttle,
	}, nil
}

// workerKey tells the process's workers apart: a connection, and what else
// its committer and requests depend on.
type workerKey struct {
	Connection
	// StagingPrefix is the committer's: it cleans up only under it.
	StagingPrefix string
	// Requests fingerprints the request settings (requests.go).
	Requests string
}

type worker struct {
	client    *s3.Client
	committer *committer.Committer
	// bucket makes the general bucket calls (markers, manifests, looks at
	// keys, listings) under the committer's default policy.
	bucket   *s3bucket.Client
	throttle *s3call.Throttle
	// writers are the stream writers of the process's writer DoFns, one
	// per stream options (see writer).
	writers map[recoverable.Options]*recoverable.Writer
}

// writer returns the process's stream writer for o over w's client. The
// writer DoFn's instances share it, and with it its pool of idle part
// buffers (PartSize x (Concurrency + 1) at most), which the memory budget
// holds for good from the writer's making: so the idle buffers of a
// process are bounded by its stream options, not by how many DoFn
// instances the runner made.
func (w *worker) writer(o recoverable.Options, idle int64) (*recoverable.Writer, error) {
	workersMu.Lock()
	defer workersMu.Unlock()
	if sw, ok := w.writers[o]; ok {
		return sw, nil
	}
	sw, err := recoverable.NewWriter(w.client, o)
	if err != nil {
		return nil, err
	}
	if w.writers == nil {
		w.writers = map[recoverable.Options]*recoverable.Writer{}
	}
	w.writers[o] = sw
	workerMemory.Hold(idle)
	return sw, nil
}

// setUp is the Setup of every DoFn that talks to S3: it hands the process's
// committer, bucket client and S3 client for the settings to ready, which
// keeps what the DoFn needs of them.
func (s folder) setUp(ctx context.Context, ready func(*committer.Committer, *s3bucket.Client, s3API) error) error {
	w, err := s.worker(ctx)
	if err != nil {
		return err
	}
	return ready(w.committer, w.bucket, w.client)
}

// worker returns the process's client and committer for the settings.
func (s folder) worker(ctx context.Context) (*worker, error) {
	key := workerKey{Connection: s.Connection, StagingPrefix: s.StagingPrefix, Requests: s.Requests.fingerprint()}
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
	w := &worker{client: client, committer: cm, bucket: s3bucket.New(client, s3bucket.Options{}), throttle: throttle}
	workers[key] = w
	return w, nil
}

// newClient builds a worker's S3 client from the settings: the AWS SDK's
// default chain, with the settings' region, endpoint, addressing and static
// credentials on top when they are set, and the request settings (bucket
// owner, encryption, object settings) on every call, and throttle's shared
// backoff and budget.
func (s folder) newClient(ctx context.Context, throttle *s3call.Throttle) (*s3.Client, error) {
	req, err := s.Requests.build()
	if err != nil {
		return nil, err
	}
	o, err := s.Connection.clientOptions(throttle)
	if err != nil {
		return nil, err
	}
	o.Options = []func(*s3.Options){req.Apply}
	c, err := s3call.NewClient(ctx, o)
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
