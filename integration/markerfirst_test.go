package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/settingsmarker"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// commitGate is a reverse proxy on 127.0.0.1 in front of the S3 server
// that holds the first CompleteMultipartUpload of the run going through it
// (the preflight's probes aside), as holder does, and stalls every later
// one without ever sending it on. Once the sender is dead and the held
// request is let go, it is the only commit of the run that reaches the
// server: exactly one file is committed, by a process that is gone.
type commitGate struct {
	srv *httptest.Server

	mu      sync.Mutex
	taken   bool
	stalled int // later completions held back and never sent

	held    chan heldRequest
	release chan struct{}
	landed  chan heldRequest
	drop    chan struct{} // closed when the test ends: stalled requests fail
}

var errStalledCommit = errors.New("commit gate: a later completion, never sent")

func newCommitGate(t testing.TB, upstream string) *commitGate {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	g := &commitGate{held: make(chan heldRequest, 1), release: make(chan struct{}), landed: make(chan heldRequest, 1), drop: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &gateTransport{g: g, base: http.DefaultTransport.(*http.Transport).Clone()}
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	g.srv = httptest.NewServer(rp)
	t.Cleanup(func() {
		close(g.drop)
		g.letGo()
		g.srv.Close()
	})
	return g
}

// letGo sends the held request on (once).
func (g *commitGate) letGo() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// Stalled is how many later completions the gate kept from the server.
func (g *commitGate) Stalled() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stalled
}

type gateTransport struct {
	g    *commitGate
	base http.RoundTripper
}

func (gt *gateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, again, err := buffered(r)
	if err != nil {
		return nil, err
	}
	ev := kindOf(r, body)
	if ev != evComplete {
		return gt.base.RoundTrip(again(r.Context()))
	}
	g := gt.g
	g.mu.Lock()
	first := !g.taken
	g.taken = true
	if !first {
		g.stalled++
	}
	g.mu.Unlock()
	if !first {
		select {
		case <-r.Context().Done():
		case <-g.drop:
		}
		return nil, errStalledCommit
	}
	_, key := splitPath(r)
	hr := heldRequest{kind: ev, method: r.Method, query: r.URL.Query(), key: key, body: body}
	g.held <- hr
	<-g.release
	// Its own context: the request lands although its sender is dead.
	resp, err := gt.base.RoundTrip(again(context.Background()))
	if err == nil {
		hr.status = resp.StatusCode
	}
	g.landed <- hr
	return resp, err
}

// markerAbove returns the settings marker found among keys in a folder
// above key (its own folder first), or "".
func markerAbove(keys map[string]bool, key string) string {
	for dir := key; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			return ""
		}
		dir = dir[:i]
		if keys[dir+"/"+ownkeys.SettingsName] {
			return dir + "/" + ownkeys.SettingsName
		}
	}
}

// committedFiles returns the s3once files among keys, sorted.
func committedFiles[V any](keys map[string]V) []string {
	var files []string
	for k := range keys {
		if ownkeys.IsFileName(outPrefix, k) {
			files = append(files, k)
		}
	}
	sort.Strings(files)
	return files
}

// TestSettingsMarkerBeforeFirstCommit: the batch example is SIGKILLed
// (its whole process group) while a proxy holds its first
// CompleteMultipartUpload and keeps every later one from the server; the
// held completion then lands, so exactly one file is committed, by a dead
// process. The folder's settings marker must already be there, with the
// run's settings: no committed file is ever left without one. A rerun with
// other Shards is then refused with [s3once:settings-changed], by the
// preflight (exit 3) and, without it, by the sink (exit 1), and commits
// nothing; a rerun with the same settings gives exactly the uninterrupted
// output. Once in the default mode (the run-wide barrier writes the marker
// before it lets any file be committed) and once with --finalize-commit
// always (the writer commits at bundle finalization, having judged and
// written the marker first).
func TestSettingsMarkerBeforeFirstCommit(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	f := newBatchFixture(t, bin)
	markerKey := ownkeys.SettingsKey(outPrefix)
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"finalize-always", []string{"--finalize-commit", "always"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			bucket := f.srv.Bucket(t)
			g := newCommitGate(t, f.srv.Endpoint())
			z := runBatch(t, bin, f.env, g.srv.URL, bucket, faultConfig, append(mode.args, "--timeout", "10m")...)
			var hr heldRequest
			select {
			case hr = <-g.held:
			case <-z.done:
				o := z.wait(0)
				t.Fatalf("the run ended before its first commit: %v\nstderr:\n%s", o, o.Stderr)
			case <-time.After(4 * time.Minute):
				t.Fatal("no commit within 4 minutes")
			}
			// The completion is on the wire: kill the run, workers and all.
			z.signalGroup(t, syscall.SIGKILL)
			killed := z.wait(time.Minute)
			if !killed.Killed {
				t.Fatalf("the run was not killed by the signal: %v\nstderr:\n%s", killed, killed.Stderr)
			}
			if kindOfWire(hr) != evComplete || hr.kind != evComplete || !ownkeys.IsFileName(outPrefix, hr.key) {
				t.Fatalf("the run was killed while the proxy held %s %s?%s (read as %s, classified %s), not the completion of an output file",
					hr.method, hr.key, hr.query.Encode(), kindOfWire(hr), hr.kind)
			}

			// Before the held completion lands: no file yet, the marker there.
			before := keySet(s3test.Keys(t, f.client, bucket, outPrefix+"/"))
			if files := committedFiles(before); len(files) > 0 {
				t.Fatalf("files committed before the first completion landed: %v", files)
			}
			if !before[markerKey] {
				t.Errorf("the run's first completion (%s) was on the wire with no settings marker %s in the folder; keys: %v", hr.key, markerKey, s3test.Keys(t, f.client, bucket, outPrefix+"/"))
			}

			g.letGo()
			landed := <-g.landed
			if landed.status != http.StatusOK {
				t.Fatalf("the held completion of %s was answered %d once it landed, want 200", hr.key, landed.status)
			}
			after := s3test.Objects(t, f.client, bucket, outPrefix+"/")
			keys := s3test.Keys(t, f.client, bucket, outPrefix+"/")
			files := committedFiles(keySet(keys))
			if len(files) != 1 || files[0] != hr.key {
				t.Fatalf("committed files after the dead run's completion landed: %v; want exactly %s", files, hr.key)
			}
			if !bytes.Equal(after[hr.key], f.ref.objects[hr.key]) {
				t.Errorf("the dead run's file %s differs from the uninterrupted run's (%d bytes, want %d)", hr.key, len(after[hr.key]), len(f.ref.objects[hr.key]))
			}
			for _, k := range files {
				if m := markerAbove(keySet(keys), k); m == "" {
					t.Errorf("committed file %s has no settings marker in any folder above it; keys: %v", k, keys)
				}
			}
			if !keySet(keys)[markerKey] {
				t.Fatalf("no settings marker %s beside the dead run's committed file; keys: %v", markerKey, keys)
			}
			marker := s3test.Object(t, f.client, bucket, markerKey)
			if got, err := settingsmarker.Decode(marker); err != nil {
				t.Errorf("the settings marker does not decode: %v\n%s", err, marker)
			} else if shards, _ := got.Get("shards"); shards != "2" {
				t.Errorf("the settings marker records shards=%q, want the run's 2:\n%s", shards, marker)
			}

			// Other Shards: refused by the preflight, and by the sink.
			for _, refused := range []struct {
				name string
				args []string
				code int
			}{
				{"preflight", nil, 3},
				{"sink", []string{"--skip-preflight"}, 1},
			} {
				args := append(append([]string{"--shards", "3"}, mode.args...), refused.args...)
				o := runBatch(t, bin, f.env, f.srv.Endpoint(), bucket, faultConfig, args...).wait(4 * time.Minute)
				if o.Code != refused.code || !hasCode(o.Stderr+o.Stdout, errcode.SettingsChanged) {
					t.Errorf("a rerun with --shards 3 (%s): %v, want exit %d with %s\nstderr:\n%s", refused.name, o, refused.code, errcode.SettingsChanged.Token(), o.Stderr)
				}
				sameObjects(t, s3test.Objects(t, f.client, bucket, outPrefix+"/"), after)
				if now := s3test.Keys(t, f.client, bucket, outPrefix+"/"); strings.Join(now, " ") != strings.Join(keys, " ") {
					t.Errorf("the refused rerun (%s) changed the folder's keys: %v, was %v", refused.name, now, keys)
				}
				if m := s3test.Object(t, f.client, bucket, markerKey); !bytes.Equal(m, marker) {
					t.Errorf("the refused rerun (%s) changed the settings marker:\n%s\nwas:\n%s", refused.name, m, marker)
				}
			}

			// The same settings: exactly the uninterrupted output.
			final := runBatch(t, bin, f.env, f.srv.Endpoint(), bucket, faultConfig, mode.args...).wait(4 * time.Minute)
			if final.Code != 0 {
				t.Fatalf("a rerun with the same settings: %v\nstderr:\n%s", final, final.Stderr)
			}
			sameObjects(t, s3test.Objects(t, f.client, bucket, outPrefix+"/"), f.ref.objects)
			if m := s3test.Object(t, f.client, bucket, markerKey); !bytes.Equal(m, marker) {
				t.Errorf("the settings marker changed on the rerun:\n%s\nwas:\n%s", m, marker)
			}
			rep := sweepAndCheckClean(t, f.client, bucket, outPrefix+"/")
			verifyFolder(t, f.srv.Endpoint(), bucket, outPrefix)
			t.Logf("killed %v into the run with %s held (%d later completions kept back); it landed with %d; the rerun %v; the sweep removed %d uploads and %d side objects",
				killed.Elapsed.Round(time.Millisecond), hr.key, g.Stalled(), landed.status, final, rep.Uploads.Removed, rep.SideObjects.Removed)
		})
	}
}

// hasCode reports whether a child's output carries c's token.
func hasCode(out string, c errcode.Code) bool {
	for _, got := range errcode.All(out) {
		if got == c {
			return true
		}
	}
	return false
}

// keySet makes a set of keys.
func keySet(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
