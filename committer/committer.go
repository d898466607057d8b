package committer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// Committer commits finished files, verifies them, cleans up after them, and
// sweeps orphans. It is safe for concurrent use; create one per S3 client and
// reuse it (it remembers which buckets passed the preflight probe).
type Committer struct {
	client S3
	opts   Options
	// b makes the general bucket calls (HEAD and read-back, listings,
	// deletes in bulk, small reads and writes) under the same options.
	b *s3bucket.Client

	mu     sync.Mutex
	probed map[string]*probe // by bucket

	md5ETags sync.Map // bucket -> bool: Preflight's PreflightResult.ETagsAreMD5
}

// probe is the preflight of one bucket, run once and shared by the commits
// that wait for it.
type probe struct {
	done chan struct{}
	err  error
}

// New returns a Committer over client. The options are checked once; an error
// wraps recoverable.ErrInvalidOptions and lists every problem.
func New(client S3, opts Options) (*Committer, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil S3 client", recoverable.ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Committer{client: client, opts: o, b: s3bucket.New(client, o.bucketOptions()), probed: map[string]*probe{}}, nil
}

// Options returns the committer's options with defaults filled in.
func (c *Committer) Options() Options { return c.opts }

// ensurePreflight runs Preflight for bucket once per Committer, before the
// first commit there. A conclusive answer is remembered; a probe that failed
// for another reason (the network, permissions) is tried again by the next
// commit.
func (c *Committer) ensurePreflight(ctx context.Context, bucket, staging string) error {
	if c.opts.SkipPreflight || c.opts.AllowUnconditional {
		return nil
	}
	c.mu.Lock()
	p := c.probed[bucket]
	if p != nil {
		c.mu.Unlock()
		select {
		case <-p.done:
			return p.err
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	p = &probe{done: make(chan struct{})}
	c.probed[bucket] = p
	c.mu.Unlock()

	_, p.err = c.Preflight(ctx, bucket, staging)
	if p.err != nil && !errors.Is(p.err, ErrConditionalWritesUnsupported) {
		c.mu.Lock()
		delete(c.probed, bucket)
		c.mu.Unlock()
	}
	close(p.done)
	return p.err
}

// cleanupContext detaches clean-up from the caller's cancellation and bounds
// it by CleanupTimeout.
func (c *Committer) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return s3call.Detached(ctx, c.opts.CleanupTimeout)
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
