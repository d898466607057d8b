package integration

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// committer.Preflight reports, in PreflightResult.Warning, a probe object it
// could not delete. (It once set the warning in a deferred function after the
// result had been copied, so the probe was left behind silently; sink's
// preflight deletes the probe again in its own clean-up either way.)
func TestCommitterPreflightReportsProbeLeftBehind(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 1})
	fc := s3fault.New(client)
	fc.On(s3fault.DeleteObject, s3fault.Always(s3fault.BeforeSend))
	c, err := committer.New(fc, committer.Options{MaxAttempts: 1, MaxRounds: 1, CleanupTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Preflight(context.Background(), bucket, "")
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	if _, herr := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(res.ProbeKey)}); herr != nil {
		t.Fatalf("the probe was deleted after all (%v); the premise of this test is gone", herr)
	}
	if res.Warning == nil {
		t.Errorf("the probe object %s was left behind, yet PreflightResult.Warning is nil", res.ProbeKey)
	}
}
