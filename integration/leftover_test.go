package integration

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestVerifyAfterCrashRerun: the batch example SIGKILLed just after the
// server took its first part leaves that file's upload open; the rerun
// commits the file under a new upload and its manifest stage aborts the
// killed attempt's uploads at the committed keys, and deletes their side
// objects, so that `s3once verify` passes with no sweep run.
func TestVerifyAfterCrashRerun(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	tp := newTap(t, srv.Endpoint())
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	bucket := srv.Bucket(t)

	plan := killPlan{kind: "after a part upload", trigger: &trigger{ev: evPart, n: 1, phase: afterServer}}
	if crashed, o := attempt(t, bin, env, tp, bucket, faultConfig, plan); !crashed {
		t.Fatalf("the attempt finished before the kill: %v", o)
	}
	open := openUploads(t, client, bucket)
	if len(open) == 0 {
		t.Fatal("the killed attempt left no upload open: the test proves nothing")
	}
	if o := runBatch(t, bin, env, srv.Endpoint(), bucket, faultConfig).wait(4 * time.Minute); o.Code != 0 {
		t.Fatalf("the rerun: %v\n%s", o, o.Stderr)
	}
	verifyFolder(t, srv.Endpoint(), bucket, outPrefix)
	if left := openUploads(t, client, bucket); len(left) > 0 {
		t.Errorf("uploads open after the rerun: %v", left)
	}
	for key, id := range open {
		if side := s3test.Keys(t, client, bucket, ownkeys.SideObjectPrefix(recoverable.DefaultStagingPrefix, id)); len(side) > 0 {
			t.Errorf("side objects of the killed attempt's upload of %s left: %v", key, side)
		}
	}
	t.Logf("the killed attempt left %d uploads; the rerun removed them", len(open))
}

// openUploads maps the key of each open multipart upload of the bucket to
// its upload ID.
func openUploads(t testing.TB, c *s3.Client, bucket string) map[string]string {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, u := range out.Uploads {
		m[aws.ToString(u.Key)] = aws.ToString(u.UploadId)
	}
	return m
}
