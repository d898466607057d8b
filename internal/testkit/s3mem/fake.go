package s3mem

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Endpoint is the base URL every client of a Fake talks to. Nothing resolves it:
// requests never leave the process.
const Endpoint = "http://s3mem.invalid"

// Region is the region clients are configured with.
const Region = "us-east-1"

// MinPartSize is S3's minimum size of a part that is not the last one.
const MinPartSize = 5 << 20

// Options tune a Fake. The zero value behaves like S3.
type Options struct {
	// PageSize caps the entries of every listing page (objects, uploads,
	// parts, whatever the request's max-keys); 0 means S3's 1000. Small
	// values make tests walk through pagination.
	PageSize int
	// RandomETags gives objects and parts ETags that are not MD5 digests of
	// their bytes, as S3 does under SSE-KMS or SSE-C. They are still
	// deterministic: the n-th ETag of a Fake is the same in every run.
	RandomETags bool
	// MinPartSize overrides the smallest size of a non-last part
	// (EntityTooSmall below it); 0 means S3's 5 MiB.
	MinPartSize int64
	// MaxParts is the highest part number accepted; 0 means S3's 10,000.
	MaxParts int32
	// LifecycleNotImplemented makes GetBucketLifecycleConfiguration answer
	// 501 NotImplemented, as servers without lifecycle support do; by default
	// it answers 404 NoSuchLifecycleConfiguration (a bucket without rules).
	LifecycleNotImplemented bool
	// Now is the server's clock; nil means time.Now (which is the bubble's
	// fake clock inside a testing/synctest bubble). SetClock and Advance
	// replace it.
	Now func() time.Time
	// Gate, if set, is called with every request that reaches the server
	// and that no fault rule caught, before it is applied, outside the
	// Fake's lock. It may block (a scheduler releasing one request at a
	// time); it must return when ctx (the request's context) is done. It
	// decides the request's fate: 0 serves it; a Kind acts as that fault
	// would; a non-nil error fails the request with that error, unapplied.
	Gate func(ctx context.Context, c Call) (Kind, error)
	// VisibleLag is how long the object of a completion that met
	// CrashLagged stays invisible; 0 means one minute.
	VisibleLag time.Duration
}

// Fake is an in-memory S3 server. Create one per test with New; its clients
// (NewClient) reach it through an http.RoundTripper, never a socket. Its
// methods are safe for concurrent use.
type Fake struct {
	opts Options

	mu        sync.Mutex
	buckets   map[string]*bucket
	fixed     *time.Time // set by SetClock
	seq       int64      // request IDs, upload IDs, random ETags
	calls     []Call
	clients   int
	dead      map[string]bool
	faults    []*faultRule
	opCount   map[Op]int
	inflight  map[string]int // bucket/key -> writes registered, not yet finished
	conflicts int
	late      map[string][]lateRequest // client -> requests that land late
}

// lateRequest is a request that met Late, waiting to be applied.
type lateRequest struct {
	r   *request
	idx int // its entry in calls
}

// New returns an empty server (no buckets).
func New(opts Options) *Fake {
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.MinPartSize <= 0 {
		opts.MinPartSize = MinPartSize
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = 10000
	}
	if opts.VisibleLag <= 0 {
		opts.VisibleLag = time.Minute
	}
	return &Fake{
		opts:     opts,
		buckets:  map[string]*bucket{},
		dead:     map[string]bool{},
		opCount:  map[Op]int{},
		inflight: map[string]int{},
		late:     map[string][]lateRequest{},
	}
}

// CreateBucket makes an empty bucket (it does nothing if it exists).
func (f *Fake) CreateBucket(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.buckets[name] == nil {
		f.buckets[name] = newBucket()
	}
}

// Bucket makes a new, uniquely named, empty bucket and returns its name.
func (f *Fake) Bucket() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	name := fmt.Sprintf("b-%06d", f.seq)
	f.buckets[name] = newBucket()
	return name
}

// ClientOptions tune NewClient.
type ClientOptions struct {
	// Name identifies the client in the call log, in fault rules and in
	// Crash; empty means "client-N", N counting from 1 per Fake.
	Name string
	// MaxAttempts is the SDK retryer's attempt count; 0 means 1 (no SDK
	// retries), so injected faults reach the code under test.
	MaxAttempts int
	// Configure, if set, edits the client's options last (checksum
	// settings, a retryer, ...). Leave HTTPClient and BaseEndpoint alone.
	Configure func(*s3.Options)
}

// NewClient returns a real S3 client bound to this server under a client
// identity (see ClientName). Path-style addressing, static credentials,
// SDK checksums and retries as configured: only the transport is fake.
func (f *Fake) NewClient(o ClientOptions) *s3.Client {
	f.mu.Lock()
	f.clients++
	name := o.Name
	if name == "" {
		name = fmt.Sprintf("client-%d", f.clients)
	}
	f.mu.Unlock()
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 1
	}
	opts := s3.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(Endpoint),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider("s3mem-access", "s3mem-secret", ""),
		RetryMaxAttempts: attempts,
		HTTPClient:       &http.Client{Transport: &transport{fake: f, client: name}},
	}
	if o.Configure != nil {
		o.Configure(&opts)
	}
	return s3.New(opts)
}

// Crash marks a client dead, as if its process were SIGKILLed: every later
// request from it fails at once, before reaching the server, and has no
// effect. Requests already at the server (held by Gate) are still applied,
// but their replies are lost.
func (f *Fake) Crash(client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead[client] = true
}

// Crashed reports whether the client was crashed (by Crash or a crash fault).
func (f *Fake) Crashed(client string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead[client]
}

// Now is the server's clock, as its Date headers give it (whole seconds).
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

func (f *Fake) now() time.Time {
	var t time.Time
	switch {
	case f.fixed != nil:
		t = *f.fixed
	case f.opts.Now != nil:
		t = f.opts.Now()
	default:
		t = time.Now()
	}
	return t.UTC().Truncate(time.Second)
}

// SetClock stops the server's clock at t (until the next SetClock or Advance).
func (f *Fake) SetClock(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fixed = &t
}

// Advance moves the server's clock forward by d, and keeps it stopped there.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.now().Add(d)
	f.fixed = &t
}

// Calls returns a copy of the call log: every request that reached the
// transport, in the order they arrived.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Conflicts counts the 409 ConditionalRequestConflict replies given so far.
func (f *Fake) Conflicts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conflicts
}

// nextID returns a fresh number, under f.mu.
func (f *Fake) nextID() int64 {
	f.seq++
	return f.seq
}

// etag returns the quoted ETag of data (an MD5, or a deterministic random
// value under RandomETags, whatever data is), under f.mu.
func (f *Fake) etag(data []byte) string {
	if f.opts.RandomETags {
		sum := md5.Sum([]byte(fmt.Sprintf("s3mem-random-etag-%d", f.nextID())))
		return `"` + hex.EncodeToString(sum[:]) + `"`
	}
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// Stored returns the bytes of the object at key as the server holds them,
// in pieces (a multipart object's parts, in order), without a request: for
// checks after a run, which need not copy a large object through a client.
// The slices are the server's own: read them, never write them. ok is false
// if there is no such object (a completion that lags shows once its time has
// come, as for a GET).
func (f *Fake) Stored(bucket, key string) (chunks [][]byte, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.buckets[bucket]
	if b == nil {
		return nil, false
	}
	f.surface(b)
	o := b.objects[key]
	if o == nil {
		return nil, false
	}
	return slices.Clip(o.chunks), true
}

// Seed stores objects in a bucket (made if missing) without requests, as a
// PutObject without checksums would leave them: for benchmarks and tests
// that need a large bucket and measure something else. It writes no call
// log entries and meets no faults.
func (f *Fake) Seed(bucket string, objects map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.buckets[bucket]
	if b == nil {
		b = newBucket()
		f.buckets[bucket] = b
	}
	for key, data := range objects {
		b.put(key, &object{
			chunks: [][]byte{data}, size: int64(len(data)), etag: f.etag(data), modified: f.now(),
			checksums: checksums{"CRC64NVME": checksum("CRC64NVME", data)}, checksumType: fullObject,
		})
	}
}
