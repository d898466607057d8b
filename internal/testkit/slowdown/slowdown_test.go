package slowdown_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/slowdown"
)

func put(c *s3.Client, bucket, key string) error {
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x")})
	return err
}

// The proxy answers what the SDK reads as S3's SlowDown (503, code
// SlowDown) during a storm, and sends everything on to the server before
// and after it; a refused request never reaches the server.
func TestProxyStorm(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	inj := slowdown.New(slowdown.Options{})
	px, err := inj.Proxy(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	c := srv.Client(s3test.ClientOptions{Endpoint: px.URL()}) // one attempt: the SDK does not retry
	if err := put(c, bucket, "before"); err != nil {
		t.Fatalf("before the storm: %v", err)
	}
	inj.Storm(time.Hour)
	err = put(c, bucket, "during")
	if s3call.APICode(err) != "SlowDown" || s3call.HTTPStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("during the storm: %v, want 503 SlowDown", err)
	}
	inj.Calm()
	if err := put(c, bucket, "after"); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	if got := strings.Join(s3test.Keys(t, srv.Client(s3test.ClientOptions{}), bucket, ""), ","); got != "after,before" {
		t.Errorf("the server holds %q, want after,before", got)
	}
	if inj.SlowDowns() != 1 || inj.Passed() != 2 || inj.Matched() != 2 {
		t.Errorf("counters: %d SlowDowns, %d passed, %d matched; want 1, 2, 2", inj.SlowDowns(), inj.Passed(), inj.Matched())
	}
}

// The rate limit is per prefix: a burst passes, what follows at once is
// answered SlowDown, another folder has its own budget, and requests Match
// leaves out always pass.
func TestRateLimitPerPrefix(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	inj := slowdown.New(slowdown.Options{Rate: 0.001, Burst: 2, Match: func(r *http.Request) bool {
		_, key := slowdown.Target(r)
		return !strings.HasPrefix(key, "free/")
	}})
	c := srv.Client(s3test.ClientOptions{HTTPClient: &http.Client{Transport: inj.Transport(nil)}})
	for i, key := range []string{"a/1", "a/2", "a/3", "b/1", "free/1", "free/2", "free/3"} {
		err := put(c, bucket, key)
		refused := key == "a/3"
		if refused != (s3call.APICode(err) == "SlowDown") || (!refused && err != nil) {
			t.Errorf("request %d (%s): %v; want refused %v", i, key, err, refused)
		}
	}
	if inj.SlowDowns() != 1 {
		t.Errorf("%d SlowDowns, want 1", inj.SlowDowns())
	}
}
