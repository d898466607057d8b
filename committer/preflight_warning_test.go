package committer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// TestPreflightReportsProbeLeftBehind: when the probe object cannot be deleted,
// Preflight still answers, and says in its Warning that the probe is left
// behind for the sweep.
func TestPreflightReportsProbeLeftBehind(t *testing.T) {
	e := newEnv(t)
	fc := s3fault.New(e.client)
	fc.On(s3fault.DeleteObject, s3fault.Always(s3fault.BeforeSend))
	c := newCommitter(t, fc, committer.Options{MaxAttempts: 1, MaxRounds: 1, CleanupTimeout: 5 * time.Second})
	res, err := c.Preflight(context.Background(), e.bucket, "")
	if err != nil {
		t.Fatalf("preflight: %v", err)
	}
	if !res.ConditionalWrites {
		t.Fatal("versitygw honours If-None-Match, preflight said it does not")
	}
	if _, herr := e.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(res.ProbeKey)}); herr != nil {
		t.Fatalf("the probe was deleted after all (%v); the fault did not take", herr)
	}
	if res.Warning == nil {
		t.Errorf("the probe object %s was left behind, yet PreflightResult.Warning is nil", res.ProbeKey)
	}
}
