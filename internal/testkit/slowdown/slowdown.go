// Package slowdown answers S3 requests "503 SlowDown" at the HTTP layer,
// below the client's retryer, the way S3 does when a prefix takes more
// requests than its partition allows or while it re-partitions. A test puts
// an Injector in front of a real S3 server, in process as an
// http.RoundTripper (Transport) or, for child processes, as a reverse proxy
// on a loopback port (Proxy), and then:
//
//   - limits each prefix (a bucket and the folder of the key) to a rate of
//     requests per second (Options.Rate, Options.Burst), answering SlowDown
//     to what exceeds it, as S3 does per partition;
//   - raises a storm (Storm): every request it matches is answered SlowDown
//     for a given time.
//
// A request answered SlowDown never reaches the server. The Injector counts
// its answers, so a test can show that the client's retryer met them. It
// addresses buckets by path (http://host/bucket/key), as the tests' servers
// do.
package slowdown

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape an Injector. The zero value throttles nothing until a
// storm.
type Options struct {
	// Rate is how many requests per second each prefix takes; what
	// exceeds it is answered SlowDown. Zero: no limit.
	Rate float64
	// Burst is how many requests a prefix takes at once, on top of the
	// rate (0: one second's worth, at least 1).
	Burst int
	// Match selects the requests the rate limit and storms apply to
	// (nil: all of them); others always pass.
	Match func(r *http.Request) bool
}

// Injector answers SlowDown to the requests beyond a prefix's rate and to
// every request during a storm. Its methods may be called at any time,
// from any goroutine.
type Injector struct {
	opts Options

	mu      sync.Mutex
	storm   time.Time // the storm lasts until then
	buckets map[string]*tokens

	slowDowns, passed, matched atomic.Int64
}

// New returns an Injector.
func New(o Options) *Injector {
	return &Injector{opts: o, buckets: map[string]*tokens{}}
}

// Storm answers SlowDown to every matched request from now for d (a
// storm already raging ends at the later of the two times).
func (i *Injector) Storm(d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if until := time.Now().Add(d); until.After(i.storm) {
		i.storm = until
	}
}

// Calm ends a storm now.
func (i *Injector) Calm() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.storm = time.Time{}
}

// SlowDowns counts the SlowDown answers given.
func (i *Injector) SlowDowns() int64 { return i.slowDowns.Load() }

// Passed counts the requests sent on to the server; Matched those of them
// that Options.Match selected.
func (i *Injector) Passed() int64  { return i.passed.Load() }
func (i *Injector) Matched() int64 { return i.matched.Load() }

// Target returns the bucket and key of a path-style request.
func Target(r *http.Request) (bucket, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// slowDown decides whether r gets SlowDown, and counts it either way.
func (i *Injector) slowDown(r *http.Request) bool {
	if i.opts.Match != nil && !i.opts.Match(r) {
		i.passed.Add(1)
		return false
	}
	now := time.Now()
	i.mu.Lock()
	refuse := now.Before(i.storm)
	if !refuse && i.opts.Rate > 0 {
		bucket, key := Target(r)
		prefix := bucket + "/" + path.Dir(key)
		tb := i.buckets[prefix]
		if tb == nil {
			burst := float64(i.opts.Burst)
			if burst <= 0 {
				burst = max(1, i.opts.Rate)
			}
			tb = &tokens{rate: i.opts.Rate, burst: burst, left: burst, at: now}
			i.buckets[prefix] = tb
		}
		refuse = !tb.take(now)
	}
	i.mu.Unlock()
	if refuse {
		i.slowDowns.Add(1)
		return true
	}
	i.passed.Add(1)
	i.matched.Add(1)
	return false
}

// tokens is one prefix's token bucket.
type tokens struct {
	rate, burst, left float64
	at                time.Time
}

func (t *tokens) take(now time.Time) bool {
	t.left = min(t.burst, t.left+now.Sub(t.at).Seconds()*t.rate)
	t.at = now
	if t.left < 1 {
		return false
	}
	t.left--
	return true
}

// The answer S3 gives.
const slowDownBody = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>%s</RequestId><HostId>slowdown</HostId></Error>`

var answerID atomic.Int64

func answer(r *http.Request) *http.Response {
	body := fmt.Sprintf(slowDownBody, fmt.Sprintf("SLOWDOWN%08d", answerID.Add(1)))
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	h.Set("x-amz-request-id", "slowdown")
	return &http.Response{
		Status: "503 Slow Down", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)),
		Request: r,
	}
}

// Transport returns a RoundTripper that answers SlowDown as the Injector
// decides and sends everything else on through base
// (http.DefaultTransport when nil).
func (i *Injector) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{i: i, base: base}
}

type transport struct {
	i    *Injector
	base http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.i.slowDown(r) {
		if r.Body != nil {
			// A RoundTripper closes the body, even when it sends nothing.
			r.Body.Close()
		}
		return answer(r), nil
	}
	return t.base.RoundTrip(r)
}

// Proxy is a reverse proxy on a loopback port in front of an S3 server,
// through an Injector: for child processes, whose clients cannot be given
// a RoundTripper.
type Proxy struct {
	url string
	srv *http.Server
	ln  net.Listener
}

// Proxy starts a reverse proxy on 127.0.0.1 (a free port) in front of
// upstream (the server's endpoint URL). Close stops it.
func (i *Injector) Proxy(upstream string) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("slowdown: upstream %q: %w", upstream, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("slowdown: listen: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	rp.Transport = i.Transport(base)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p := &Proxy{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: rp, ReadHeaderTimeout: time.Minute}, ln: ln}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("slowdown proxy: %v", err)
		}
	}()
	return p, nil
}

// URL is the proxy's endpoint.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error { return p.srv.Close() }
