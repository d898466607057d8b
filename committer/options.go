package committer

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// Defaults of Options' zero values.
const (
	DefaultMaxAttempts      = 6
	DefaultMaxRounds        = 6
	DefaultBaseBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff       = 5 * time.Second
	DefaultCallTimeout      = s3call.BaseCallTimeout
	DefaultCompleteTimeout  = 15 * time.Minute
	DefaultCleanupTimeout   = s3call.DefaultCleanupTimeout
	DefaultSweepConcurrency = 8
)

// Options configure a Committer. The zero value of each field means its
// default; New checks them once.
type Options struct {
	// MaxAttempts is how often one S3 call is tried when it fails in a way
	// worth retrying (5xx, SlowDown, timeouts, connection resets), a
	// read-back's streamed GET included. Default 6. The SDK client's own
	// retryer multiplies this; give the committer a client with few SDK
	// retries if you want this to be the whole budget.
	MaxAttempts int
	// MaxRounds bounds the rounds of the commit protocol: completions of one
	// upload (each round's calls retried under MaxAttempts), and looks at a
	// key whose object was replaced while it was being read back. Default 6.
	MaxRounds int
	// BaseBackoff and MaxBackoff shape the wait between attempts: the wait
	// before attempt n+1 (n counting from 1) is a random time between half
	// and all of min(MaxBackoff, BaseBackoff x 2^(n-1)), as s3call.Policy
	// computes it. Defaults 100ms and 5s. Every wait ends early when
	// the context is done.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// CallTimeout bounds each S3 call (not the read-back of a whole object,
	// which is bounded by the context alone). A call that times out counts as
	// a retryable failure. Default 30 seconds (s3call.BaseCallTimeout, the
	// writer's bound for a call without a large body); negative means no
	// per-call bound.
	CallTimeout time.Duration
	// CompleteTimeout bounds each CompleteMultipartUpload, which S3 may take
	// minutes to answer for a large upload (keeping the connection alive in
	// the meantime). A completion that times out is looked into like any
	// other whose reply was lost. Default 15 minutes; negative means no bound.
	CompleteTimeout time.Duration
	// CleanupTimeout bounds the clean-up that runs after the outcome is known
	// (aborting a losing upload, deleting side objects, deleting the preflight
	// probe). Clean-up runs on a context detached from the caller's, so a
	// cancelled commit still tidies up. Default 30s.
	CleanupTimeout time.Duration
	// SettleTimeout bounds how long a commit that finds the token's upload
	// gone and the key empty waits for an object to appear there before it
	// reports ErrDataLost (or ErrRewriteRequired after a 409). The wait
	// exists because another committer may be completing the same upload
	// (the sink completes every file twice, at bundle finalization and in
	// its commit stage), and a server may drop the upload before the object
	// shows. That completion started before ours saw the upload gone and
	// ends, for its caller, within CompleteTimeout; so SettleTimeout must be
	// at least CompleteTimeout, and the zero value means CompleteTimeout
	// (DefaultCompleteTimeout when CompleteTimeout is unbounded). The key is
	// polled with backoff until then; a wait past 30 seconds is logged.
	SettleTimeout time.Duration
	// Logger receives the rare notes a long wait deserves (a settle wait
	// that outlasts 30 seconds); nil means slog.Default().
	Logger *slog.Logger
	// AllowUnconditional is UNSAFE: it commits without If-None-Match (for
	// servers that reject or ignore the header), and Preflight then reports a
	// server that ignores it instead of failing. Without the condition two
	// attempts that wrote different bytes under one key can both complete and
	// the later one silently replaces the earlier; the committer still checks
	// the key before and after completing and reports what it finds, but it
	// cannot undo a replacement. Use it only when a single writer per key is
	// guaranteed some other way.
	AllowUnconditional bool
	// SkipPreflight stops the committer from probing each bucket (once, before
	// its first commit there) for conditional-write support. Set it only when
	// the caller runs Preflight itself.
	SkipPreflight bool
	// SweepConcurrency is how many uploads a sweep inspects and aborts at
	// once. Default 8.
	SweepConcurrency int
	// StagingPrefix is the folder of the writers' side objects and probes,
	// as given to recoverable.Options.StagingPrefix; default
	// recoverable.DefaultStagingPrefix. After a commit the committer deletes
	// side objects only under it (never under the staging prefix a token
	// names), and its preflight probe is written there.
	StagingPrefix string
	// Versioned says the bucket keeps versions (versioning enabled or
	// suspended): the clean-up after a commit and the sweep then also
	// remove the noncurrent versions and delete markers of s3once's own
	// staging keys (versions.go), which needs s3:ListBucketVersions and
	// s3:DeleteObjectVersion and a client that lists versions.
	Versioned bool
}

func (o Options) withDefaults() (Options, error) {
	var problems []string
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxAttempts < 1 || o.MaxAttempts > 100 {
		problems = append(problems, fmt.Sprintf("MaxAttempts %d must be in [1, 100]", o.MaxAttempts))
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	if o.MaxRounds < 1 || o.MaxRounds > 100 {
		problems = append(problems, fmt.Sprintf("MaxRounds %d must be in [1, 100]", o.MaxRounds))
	}
	if o.BaseBackoff == 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.BaseBackoff < 0 || o.MaxBackoff < o.BaseBackoff {
		problems = append(problems, fmt.Sprintf("backoff must satisfy 0 < BaseBackoff (%v) <= MaxBackoff (%v)", o.BaseBackoff, o.MaxBackoff))
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.CompleteTimeout == 0 {
		o.CompleteTimeout = DefaultCompleteTimeout
	}
	switch {
	case o.SettleTimeout == 0 && o.CompleteTimeout > 0:
		o.SettleTimeout = o.CompleteTimeout
	case o.SettleTimeout == 0:
		o.SettleTimeout = DefaultCompleteTimeout
	case o.SettleTimeout < 0:
		problems = append(problems, fmt.Sprintf("SettleTimeout %v must be positive", o.SettleTimeout))
	case o.CompleteTimeout > 0 && o.SettleTimeout < o.CompleteTimeout:
		problems = append(problems, fmt.Sprintf("SettleTimeout %v must be at least CompleteTimeout %v (a completion in flight elsewhere may take that long)", o.SettleTimeout, o.CompleteTimeout))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	if o.CleanupTimeout < 0 {
		problems = append(problems, fmt.Sprintf("CleanupTimeout %v must be positive", o.CleanupTimeout))
	}
	if o.SweepConcurrency == 0 {
		o.SweepConcurrency = DefaultSweepConcurrency
	}
	if o.SweepConcurrency < 1 || o.SweepConcurrency > 256 {
		problems = append(problems, fmt.Sprintf("SweepConcurrency %d must be in [1, 256]", o.SweepConcurrency))
	}
	o.StagingPrefix = s3call.StagingPrefix(o.StagingPrefix)
	if strings.HasPrefix(o.StagingPrefix, "/") {
		problems = append(problems, fmt.Sprintf("StagingPrefix %q must not start with '/'", o.StagingPrefix))
	}
	if len(problems) > 0 {
		return o, fmt.Errorf("%w: %s", recoverable.ErrInvalidOptions, strings.Join(problems, "; "))
	}
	return o, nil
}
