package s3call_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// outage answers requests with 500 InternalError below the SDK's retryer:
// every attempt while down, and only each call's first attempt while
// flaky; otherwise it sends them on.
type outage struct {
	mode   atomic.Int32 // 0 up, 1 down, 2 flaky
	failed atomic.Int64
	base   http.RoundTripper
}

const internalErrorBody = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>OUTAGE%08d</RequestId></Error>`

func (o *outage) RoundTrip(r *http.Request) (*http.Response, error) {
	// The SDK numbers each call's attempts in this header.
	first := strings.HasPrefix(r.Header.Get("Amz-Sdk-Request"), "attempt=1;")
	if m := o.mode.Load(); m == 1 || m == 2 && first {
		if r.Body != nil {
			r.Body.Close()
		}
		body := fmt.Sprintf(internalErrorBody, o.failed.Add(1))
		return &http.Response{
			Status: "500 Internal Server Error", StatusCode: http.StatusInternalServerError,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: r,
		}, nil
	}
	return o.base.RoundTrip(r)
}

// afterOutage runs calls as a writer's stream makes them (the SDK's
// retryer inside each attempt, 3 attempts) through an outage of 30 calls,
// each failing on all its attempts, and then a flaky stretch where each
// call's first attempt fails, and returns the flaky stretch's failures.
// The SDK's default retry quota (500 tokens, 14 a retry, kept by retries
// that fail) is spent within the outage, and from then on no call is
// retried: each flaky call fails. Without a quota each succeeds at its
// second attempt.
func afterOutage(t *testing.T) (failed int, first error) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	o := &outage{base: http.DefaultTransport}
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c, err := s3call.NewClient(context.Background(), s3call.ClientOptions{
		Endpoint: srv.Endpoint(), Region: s3test.Region, PathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""), MaxAttempts: 3,
		Options: []func(*s3.Options){func(so *s3.Options) {
			so.HTTPClient = &http.Client{Transport: o}
			// The retryer's own, quota and all; only its waits are cut
			// short, so that the outage takes no minutes.
			so.Retryer = retry.AddWithMaxBackoffDelay(so.Retryer, time.Millisecond)
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := throttled{client: c, bucket: bucket}
	ctx := context.Background()
	o.mode.Store(1)
	for i := range 30 {
		if err := tc.put(ctx, fmt.Sprintf("out/down-%d", i), []byte("x")); err == nil {
			t.Fatalf("call %d went through the outage", i)
		}
	}
	o.mode.Store(2)
	for i := range 20 {
		if err := tc.put(ctx, fmt.Sprintf("out/flaky-%d", i), []byte("x")); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return failed, first
}

// TestRetryQuotaNeverEndsACall: after an outage that would have spent the
// SDK's default retry quota, every call still gets its SDK retries, so a
// flaky server costs retries, not failures.
func TestRetryQuotaNeverEndsACall(t *testing.T) {
	if failed, first := afterOutage(t); failed > 0 {
		t.Errorf("after the outage, %d of 20 calls whose first attempt failed were not retried; the first: %v", failed, first)
	}
}
