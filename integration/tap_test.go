package integration

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// event is an S3 call of the sink's protocol, as seen on the wire.
type event string

const (
	evCreate   event = "create"   // CreateMultipartUpload
	evPart     event = "part"     // UploadPart
	evPersist  event = "persist"  // PutObject of a side object: a persist's tail
	evComplete event = "complete" // CompleteMultipartUpload: a commit
	evAbort    event = "abort"    // AbortMultipartUpload
	evDelete   event = "delete"   // DeleteObjects: a clean-up of side objects
	evProbe    event = "probe"    // any call of the preflight's probes
	evOther    event = "other"
	// evAny is no call of its own: a trigger on it fires at the n-th call
	// of any kind, a moment of the run's progress rather than of the clock.
	evAny event = "any call"
)

// phase says when, around the server's handling of a request, an action
// fires: before the request reaches the server, or after the server has
// answered but before the answer reaches the client.
type phase int

const (
	beforeServer phase = iota
	afterServer
	// duringServer sends the request on and fires the action while the
	// server handles it (after the trigger's delay); the reply, if any,
	// goes back to the client.
	duringServer
)

func (p phase) String() string {
	switch p {
	case beforeServer:
		return "before the server"
	case afterServer:
		return "after the server, before the reply"
	}
	return "while the server handles it"
}

// trigger fires action at the n-th event of a kind (counted from 1), or at
// the n-th call of any kind (evAny), in a phase. The action runs in the
// proxy's request goroutine; the request is then failed, so whoever sent it
// never sees a reply.
type trigger struct {
	ev     event
	n      int
	phase  phase
	delay  time.Duration // duringServer only
	action func()
}

func (tr *trigger) String() string {
	return fmt.Sprintf("%s #%d, %s", tr.ev, tr.n, tr.phase)
}

// tap is a reverse proxy on 127.0.0.1 in front of the S3 server that counts
// the protocol's calls and can act at an exact one of them (kill the writer
// or the server). Each child run goes through it.
type tap struct {
	srv *httptest.Server

	mu      sync.Mutex
	counts  map[event]int
	total   int // calls of any kind
	trigger *trigger
	fired   bool
}

func newTap(t testing.TB, upstream string) *tap {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{counts: map[event]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	rp.Transport = &tapTransport{tap: tp, base: base}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusBadGateway)
	}
	tp.srv = httptest.NewServer(rp) // binds 127.0.0.1
	t.Cleanup(tp.srv.Close)
	return tp
}

// URL is the endpoint children use.
func (tp *tap) URL() string { return tp.srv.URL }

// arm resets the counts and sets the trigger for the next run (nil: none).
func (tp *tap) arm(tr *trigger) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.counts = map[event]int{}
	tp.total = 0
	tp.trigger = tr
	tp.fired = false
}

// Counts returns the calls seen since the last arm.
func (tp *tap) Counts() map[event]int {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	m := make(map[event]int, len(tp.counts))
	for k, v := range tp.counts {
		m[k] = v
	}
	return m
}

// Fired reports whether the armed trigger fired.
func (tp *tap) Fired() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.fired
}

// note counts r and returns the trigger to fire before and after the
// server, if r is the one.
func (tp *tap) note(r *http.Request) *trigger {
	ev := classify(r)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.counts[ev]++
	tp.total++
	tr := tp.trigger
	if tr == nil || tp.fired {
		return nil
	}
	if (tr.ev == ev && tr.n == tp.counts[ev]) || (tr.ev == evAny && tr.n == tp.total) {
		tp.fired = true
		return tr
	}
	return nil
}

var errTapped = errors.New("tap: request cut off")

type tapTransport struct {
	tap  *tap
	base http.RoundTripper
}

func (tt *tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr := tt.tap.note(r)
	if tr != nil && tr.phase == beforeServer {
		tr.action()
		return nil, errTapped
	}
	if tr != nil && tr.phase == duringServer {
		go func() {
			time.Sleep(tr.delay)
			tr.action()
		}()
	}
	resp, err := tt.base.RoundTrip(r)
	if tr != nil && tr.phase == afterServer {
		if err == nil {
			resp.Body.Close()
		}
		tr.action()
		return nil, errTapped
	}
	return resp, err
}

// classify names a path-style S3 request.
func classify(r *http.Request) event {
	q := r.URL.Query()
	_, uploads := q["uploads"]
	upload := q.Get("uploadId") != ""
	// /bucket/key...
	key := ""
	if parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2); len(parts) == 2 {
		key = parts[1]
	}
	switch {
	case strings.Contains(key, "/preflight/") || strings.Contains(key, "_s3once_preflight/"):
		return evProbe
	case r.Method == http.MethodPost && uploads:
		return evCreate
	case r.Method == http.MethodPut && upload && q.Get("partNumber") != "":
		return evPart
	case r.Method == http.MethodPost && upload:
		return evComplete
	case r.Method == http.MethodDelete && upload:
		return evAbort
	case r.Method == http.MethodPost && q.Has("delete"):
		return evDelete
	case r.Method == http.MethodPut && !upload && strings.HasPrefix(key, ".s3once/staging/"):
		return evPersist
	}
	return evOther
}

// killer kills the child it is given, once it is given one: a trigger can be
// armed before the child it kills is started.
type killer struct {
	mu    sync.Mutex
	c     *child
	ready chan struct{}
}

func newKiller() *killer { return &killer{ready: make(chan struct{})} }

func (k *killer) set(c *child) {
	k.mu.Lock()
	k.c = c
	k.mu.Unlock()
	close(k.ready)
}

// kill SIGKILLs the child and waits until it is gone.
func (k *killer) kill() {
	<-k.ready
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	c.kill()
}
