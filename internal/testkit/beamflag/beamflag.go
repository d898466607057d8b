// Package beamflag holds test helpers for Beam's --endpoint flag: setting
// it for one test, and a server that counts the requests sent to the URL
// given there.
package beamflag

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// SetEndpoint sets Beam's --endpoint flag until the test ends.
func SetEndpoint(t testing.TB, endpoint string) {
	t.Helper()
	was := *jobopts.Endpoint
	*jobopts.Endpoint = endpoint
	t.Cleanup(func() { *jobopts.Endpoint = was })
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
