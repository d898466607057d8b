// Package beamflag holds test helpers for Beam's --endpoint flag: setting
// it for one test, and a server that counts the requests sent to the URL
// given there. It finds the flag by name in the process's flag set, where
// Beam's job options register it, and so links no Beam itself: only the
// sink speaks Beam.
package beamflag

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// SetEndpoint sets Beam's --endpoint flag until the test ends. The test
// binary must link Beam's job options (any test of a package that uses the
// sink does); without them it fails the test.
func SetEndpoint(t testing.TB, endpoint string) {
	t.Helper()
	f := flag.Lookup("endpoint")
	if f == nil {
		t.Fatal("beamflag: no --endpoint flag is registered: the test binary does not link Beam's job options")
	}
	was := f.Value.String()
	if err := f.Value.Set(endpoint); err != nil {
		t.Fatalf("beamflag: set --endpoint: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Value.Set(was); err != nil {
			t.Errorf("beamflag: restore --endpoint: %v", err)
		}
	})
}

// Recorder is an HTTP server that stands for an S3 server and counts the
// requests that reach it (any request would be an S3 call); it answers
// each with 403.
func Recorder(t testing.TB) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(s.Close)
	return s, &n
}
