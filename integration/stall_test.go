package integration

import (
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// A connection that stalls (the server, or a middlebox, stops answering
// without closing it) must not hang the writer: each attempt of a stream's S3
// call is bounded (recoverable.Options.CallTimeout) and made again when it gets
// no answer. Here the proxy holds the first part upload without ever
// answering; the run goes on through the retried attempt and its output is
// exactly that of an undisturbed run.
func TestStalledPartUploadRetried(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	tp := newTap(t, srv.Endpoint())
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	var refs references
	ref := refs.get(t, bin, env, srv, tp, client, faultConfig)

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tp.arm(&trigger{ev: evPart, n: 1, phase: beforeServer, action: func() { <-release }})
	bucket := srv.Bucket(t)
	o := runBatch(t, bin, env, tp.URL(), bucket, faultConfig).wait(4 * time.Minute)
	if o.TimedOut {
		t.Fatalf("the run hung for %v on one stalled part upload", o.Elapsed.Round(time.Second))
	}
	if o.Code != 0 {
		t.Fatalf("the run failed on one stalled part upload: %v\nstderr:\n%s", o, o.Stderr)
	}
	sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), ref.objects)
	t.Logf("the run ended in %v", o.Elapsed.Round(time.Second))
}
