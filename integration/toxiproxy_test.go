package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// toxiproxy is a toxiproxy-server process on 127.0.0.1, driven through its
// HTTP API, with one proxy in front of an upstream.
type toxiproxy struct {
	api    string // http://127.0.0.1:port
	listen string // the proxy's host:port
	http   *http.Client
}

// startToxiproxy starts toxiproxy-server on a free loopback port, stopped by
// its PID when the test ends, and creates a proxy to upstream (host:port).
func startToxiproxy(t testing.TB, upstream string) *toxiproxy {
	t.Helper()
	bin, err := s3test.Tool("toxiproxy-server")
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proxyPort, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, bin, os.Environ(), nil, "-host", "127.0.0.1", "-port", fmt.Sprint(apiPort), "-seed", "1")
	tp := &toxiproxy{api: fmt.Sprintf("http://127.0.0.1:%d", apiPort), listen: fmt.Sprintf("127.0.0.1:%d", proxyPort),
		http: &http.Client{Timeout: 10 * time.Second}}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := tp.http.Get(tp.api + "/version")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-c.done:
			t.Fatalf("toxiproxy-server exited at start: %s", c.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("toxiproxy-server did not answer within 15s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tp.do(t, http.MethodPost, "/proxies", map[string]any{
		"name": "s3", "listen": tp.listen, "upstream": upstream, "enabled": true,
	})
	return tp
}

// Endpoint is the S3 endpoint through the proxy.
func (tp *toxiproxy) Endpoint() string { return "http://" + tp.listen }

// toxic is one toxiproxy toxic.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float64        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

func (tp *toxiproxy) add(t testing.TB, tx toxic) {
	t.Helper()
	tp.do(t, http.MethodPost, "/proxies/s3/toxics", tx)
}

// clear removes every toxic.
func (tp *toxiproxy) clear(t testing.TB) {
	t.Helper()
	var list []toxic
	b := tp.do(t, http.MethodGet, "/proxies/s3/toxics", nil)
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("toxiproxy: list toxics: %v", err)
	}
	for _, tx := range list {
		tp.do(t, http.MethodDelete, "/proxies/s3/toxics/"+tx.Name, nil)
	}
}

func (tp *toxiproxy) do(t testing.TB, method, path string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, tp.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tp.http.Do(req)
	if err != nil {
		t.Fatalf("toxiproxy %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("toxiproxy %s %s: %s: %s", method, path, resp.Status, out)
	}
	return out
}

// The batch example writes through toxiproxy while a fault is in force. A
// run under a fault ends either with exactly the uninterrupted output, or
// with a clear error and no wrong object (files may be missing, none may
// differ). Once the fault is removed, a rerun completes exactly, and a sweep
// leaves nothing behind.
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	tp := newTap(t, srv.Endpoint())
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	cfg := faultConfig
	var refs references
	ref := refs.get(t, bin, env, srv, tp, client, cfg)
	proxy := startToxiproxy(t, srv.Addr())

	cases := []struct {
		name   string
		toxics []toxic
		// mustSucceed: the fault only slows things down.
		mustSucceed bool
		// mustFail: nothing can get through; the preflight says so and
		// nothing at all is written.
		mustFail bool
	}{
		{name: "latency", mustSucceed: true, toxics: []toxic{
			{Name: "lat-up", Type: "latency", Stream: "upstream", Toxicity: 1, Attributes: map[string]any{"latency": 5, "jitter": 3}},
			{Name: "lat-down", Type: "latency", Stream: "downstream", Toxicity: 1, Attributes: map[string]any{"latency": 5, "jitter": 3}},
		}},
		{name: "bandwidth", mustSucceed: true, toxics: []toxic{
			{Name: "bw-up", Type: "bandwidth", Stream: "upstream", Toxicity: 1, Attributes: map[string]any{"rate": 4096}},
			{Name: "bw-down", Type: "bandwidth", Stream: "downstream", Toxicity: 1, Attributes: map[string]any{"rate": 4096}},
		}},
		{name: "reset some connections", toxics: []toxic{
			{Name: "reset", Type: "reset_peer", Stream: "upstream", Toxicity: 0.3, Attributes: map[string]any{"timeout": 200}},
		}},
		{name: "cut requests mid-body", toxics: []toxic{
			{Name: "cut", Type: "limit_data", Stream: "upstream", Toxicity: 0.3, Attributes: map[string]any{"bytes": 100_000}},
		}},
		{name: "stall some connections", toxics: []toxic{
			{Name: "stall", Type: "timeout", Stream: "upstream", Toxicity: 0.15, Attributes: map[string]any{"timeout": 1500}},
		}},
		{name: "reset every connection", mustFail: true, toxics: []toxic{
			{Name: "reset-all", Type: "reset_peer", Stream: "upstream", Toxicity: 1, Attributes: map[string]any{"timeout": 0}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := srv.Bucket(t)
			for _, tx := range tc.toxics {
				proxy.add(t, tx)
			}
			o := runBatch(t, bin, env, proxy.Endpoint(), bucket, cfg).wait(4 * time.Minute)
			proxy.clear(t)
			if o.TimedOut {
				t.Fatalf("the run under %s hung\nstderr:\n%s", tc.name, o.Stderr)
			}
			got := s3test.Objects(t, client, bucket, outPrefix+"/")
			switch {
			case o.Code == 0:
				sameObjects(t, got, ref.objects)
			case tc.mustSucceed:
				t.Fatalf("the run under %s failed: %v\nstderr:\n%s", tc.name, o, o.Stderr)
			default:
				noWrongObject(t, got, ref.objects)
				if !strings.Contains(o.Stderr, "s3once batch:") {
					t.Errorf("the run failed (%v) without a clear message:\n%s", o, o.Stderr)
				}
			}
			if tc.mustFail {
				if o.Code != 3 {
					t.Errorf("under %s: %v, want exit 3 (preflight)\nstderr:\n%s", tc.name, o, o.Stderr)
				}
				if len(got) > 0 || len(s3test.Uploads(t, client, bucket)) > 0 || len(s3test.Keys(t, client, bucket, "")) > 0 {
					t.Errorf("under %s something was written", tc.name)
				}
			}
			t.Logf("under %s: %v with %d of %d objects; %s", tc.name, o, len(got), len(ref.objects), firstLines(o.Stderr, 2))

			final := runBatch(t, bin, env, proxy.Endpoint(), bucket, cfg).wait(4 * time.Minute)
			if final.Code != 0 {
				t.Fatalf("rerun without the fault: %v\nstderr:\n%s", final, final.Stderr)
			}
			sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), ref.objects)
			rep := sweepAndCheckClean(t, client, bucket, outPrefix+"/")
			t.Logf("rerun %v; sweep removed %d uploads and %d side objects", final, rep.Uploads.Removed, rep.SideObjects.Removed)
		})
	}
}

// firstLines returns the first n lines of s, shortened.
func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	out := strings.Join(lines, " / ")
	if len(out) > 400 {
		out = out[:400] + "..."
	}
	return out
}
