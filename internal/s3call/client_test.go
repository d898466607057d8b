package s3call_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// With no credentials anywhere and an instance-metadata service that
// refuses tokens (as an address off EC2 may), finding credentials fails
// without the SDK's warning about falling back to IMDSv1.
func TestNoIMDSWarningWithoutCredentials(t *testing.T) {
	var asked bool
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = true
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer imds.Close()
	s3test.NoCredentials(t, imds.URL)
	var logged bytes.Buffer
	c, err := s3call.NewClient(context.Background(), s3call.ClientOptions{Endpoint: "http://127.0.0.1:1", LogTo: &logged})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Options().Credentials.Retrieve(context.Background()); err == nil {
		t.Fatal("credentials found where there are none")
	}
	if !asked {
		t.Fatal("the instance-metadata stub was never asked: the test shows nothing")
	}
	if strings.Contains(logged.String(), "IMDS") {
		t.Errorf("the SDK logged:\n%s", logged.String())
	}
}
