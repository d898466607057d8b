package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// TestVerifyAfterRuns: s3once verify passes on the batch example's folder,
// after a rerun of the same command (every file kept, every manifest
// byte-identical); on a folder of output version 1 (no manifests) it
// cannot prove the files' bytes by a listing (exit 3, saying so) and
// passes with --read, which reads and decodes every file and counts its
// records; it fails once a file the manifest lists is gone.
func TestVerifyAfterRuns(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	cfg := faultConfig

	bucket := srv.Bucket(t)
	for run := range 2 {
		if o := runBatch(t, bin, env, srv.Endpoint(), bucket, cfg).wait(4 * time.Minute); o.Code != 0 {
			t.Fatalf("run %d: %v\n%s", run, o, o.Stderr)
		}
		rep := verifyFolder(t, srv.Endpoint(), bucket, outPrefix)
		parts, _ := rep["partitions"].([]any)
		if len(parts) == 0 {
			t.Fatalf("run %d: verify saw no partition: %v", run, rep)
		}
		for _, p := range parts {
			if by := p.(map[string]any)["checked_by"]; by != "manifest" {
				t.Errorf("run %d: partition %v checked by %v; want its manifest", run, p, by)
			}
		}
	}

	// A folder of output version 1 has no manifests: verify falls back.
	v1 := srv.Bucket(t)
	if o := runBatch(t, bin, env, srv.Endpoint(), v1, cfg, "--output-version", "1").wait(4 * time.Minute); o.Code != 0 {
		t.Fatalf("a run of output version 1: %v\n%s", o, o.Stderr)
	}
	rep := verifyFolder(t, srv.Endpoint(), v1, outPrefix, "--read")
	for _, p := range rep["partitions"].([]any) {
		if by := p.(map[string]any)["checked_by"]; by != "reading" {
			t.Errorf("partition %v of a version-1 folder checked by %v; want every file read", p, by)
		}
	}
	if out, code := runVerify(t, srv.Endpoint(), v1, outPrefix); code != 3 || !strings.Contains(string(out), "--read") {
		t.Errorf("verify of a version-1 folder without --read exited %d (want 3) or does not say how to prove it:\n%s", code, out)
	}

	// A file gone: verify fails.
	keys := s3test.Keys(t, client, bucket, outPrefix+"/")
	for _, k := range keys {
		if strings.Contains(k, "-file-") {
			if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if out, code := runVerify(t, srv.Endpoint(), bucket, outPrefix); code != 1 {
		t.Errorf("verify after a file was deleted exited %d; want 1\n%s", code, out)
	}
}
