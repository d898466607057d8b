package scenario

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// proxy serves an S3 server to the sink over loopback and ends a run
// between two S3 calls: once armed with a limit N, every request after the
// N-th is answered 403 AccessDenied, which no layer retries, so the run
// fails there as if its process had died (what it already sent stays).
type proxy struct {
	srv      *httptest.Server
	upstream func(*http.Request) (*http.Response, error)
	limit    atomic.Int64 // requests let through; < 0: no limit
	count    atomic.Int64
	refused  atomic.Int64
	// refusals names the requests refused (method and path), for a
	// failure's report.
	refusals sync.Map
	// at, once armed by armAt, sets the limit at the first request it
	// matches.
	at atomic.Pointer[tripwire]
}

// tripwire ends a run at the first request it matches: refusing that
// request (before) or every one after it.
type tripwire struct {
	match  func(*http.Request) bool
	before bool
}

// refusedCalls lists the requests refused since the proxy was armed.
func (p *proxy) refusedCalls() []string {
	var out []string
	p.refusals.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	slices.Sort(out)
	return out
}

// newProxy starts a loopback server whose requests go to upstream.
func newProxy(upstream func(*http.Request) (*http.Response, error)) *proxy {
	p := &proxy{upstream: upstream}
	p.limit.Store(-1)
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// arm sets the limit (negative: none) and resets the count.
func (p *proxy) arm(limit int64) {
	p.count.Store(0)
	p.refused.Store(0)
	p.refusals.Clear()
	p.at.Store(nil)
	p.limit.Store(limit)
}

// armAt lets requests through until the first that match accepts, then
// refuses that one (before) or every request after it; arm(-1) disarms.
func (p *proxy) armAt(match func(*http.Request) bool, before bool) {
	p.arm(-1)
	p.at.Store(&tripwire{match: match, before: before})
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	n := p.count.Add(1)
	if t := p.at.Load(); t != nil && t.match(r) && p.at.CompareAndSwap(t, nil) {
		if t.before {
			p.limit.Store(n - 1)
		} else {
			p.limit.Store(n)
		}
	}
	if l := p.limit.Load(); l >= 0 && n > l {
		p.refused.Add(1)
		p.refusals.Store(r.Method+" "+r.URL.RequestURI(), true)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>the scenario test ended this run here</Message></Error>`)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://upstream"+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	resp, err := p.upstream(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// viaClient sends requests through an S3 client's HTTP client (the
// in-memory server's transport), to its endpoint.
func viaClient(c *s3.Client, endpoint string) func(*http.Request) (*http.Response, error) {
	hc := c.Options().HTTPClient
	base, _ := url.Parse(endpoint)
	return func(r *http.Request) (*http.Response, error) {
		r.URL.Scheme, r.URL.Host = base.Scheme, base.Host
		r.Host = base.Host
		return hc.Do(r)
	}
}

// viaHTTP sends requests to a real server at endpoint, keeping the Host
// header the client signed.
func viaHTTP(endpoint string) func(*http.Request) (*http.Response, error) {
	base, _ := url.Parse(endpoint)
	return func(r *http.Request) (*http.Response, error) {
		r.URL.Scheme, r.URL.Host = base.Scheme, base.Host
		return http.DefaultTransport.RoundTrip(r)
	}
}
