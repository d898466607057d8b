package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3fault"
	"github.com/s3once/s3once/internal/s3test"
)

// Tests of bugs found in other packages, left to their owners. They fail
// until fixed, so they run only when S3ONCE_KNOWN_BUGS is set (make test
// stays green meanwhile); delete the skip with the fix.
func knownBug(t *testing.T) {
	t.Helper()
	if os.Getenv("S3ONCE_KNOWN_BUGS") == "" {
		t.Skip("known bug, reported to the package's owner; run with S3ONCE_KNOWN_BUGS=1 to see it fail")
	}
}

// committer.Preflight documents PreflightResult.Warning as "a failure to
// delete the probe object afterwards". The deferred function that sets it
// assigns to the local result after the return statement has copied it (the
// results are unnamed), so the warning never reaches the caller: the probe
// object is left behind silently.
func TestKnownBugPreflightWarningLost(t *testing.T) {
	knownBug(t)
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 1})
	fc := s3fault.New(client)
	fc.On(s3fault.DeleteObject, s3fault.Always(s3fault.BeforeSend))
	c, err := committer.New(fc, committer.Options{MaxAttempts: 1, CleanupTimeout: 5 * time.Second})
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
