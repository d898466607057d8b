// Package awssmoke is an opt-in smoke test against real AWS S3, run by
// `make test-aws`. It reaches the internet, so it runs only when the
// environment names the buckets:
//
//	S3ONCE_AWS_BUCKET            a bucket to write under s3once-smoke/<run>/ (required)
//	S3ONCE_AWS_VERSIONED_BUCKET  a bucket with versioning enabled, for the sweep (required)
//	AWS_REGION                   the buckets' region (required)
//	AWS_ACCESS_KEY_ID, ...       credentials, from the SDK's standard chain
//	S3ONCE_AWS_KMS_KEY_ID        a KMS key for the SSE-KMS file (optional: the account's default key)
//	S3ONCE_AWS_OWNER             the buckets' 12-digit account ID (optional: ExpectedBucketOwner)
//
// Under `go test ./...` without those variables the test skips; under
// `make test-aws` (S3ONCE_AWS_REQUIRED=1) a missing variable fails it, so a
// run that did not happen never counts as a pass.
package awssmoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3req"
	"github.com/s3once/s3once/recoverable"
	"github.com/s3once/s3once/sink"
)

func TestMain(m *testing.M) { ptest.Main(m) }

type env struct {
	bucket, versioned, region, kmsKey, owner string
}

func loadEnv(t *testing.T) env {
	t.Helper()
	e := env{
		bucket: os.Getenv("S3ONCE_AWS_BUCKET"), versioned: os.Getenv("S3ONCE_AWS_VERSIONED_BUCKET"),
		region: os.Getenv("AWS_REGION"), kmsKey: os.Getenv("S3ONCE_AWS_KMS_KEY_ID"), owner: os.Getenv("S3ONCE_AWS_OWNER"),
	}
	var missing []string
	for name, v := range map[string]string{"S3ONCE_AWS_BUCKET": e.bucket, "S3ONCE_AWS_VERSIONED_BUCKET": e.versioned, "AWS_REGION": e.region} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		msg := "SKIPPED: the AWS smoke test did not run: set " + strings.Join(missing, ", ")
		if os.Getenv("S3ONCE_AWS_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return e
}

func (e env) client(t *testing.T, req s3req.Settings) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(e.region))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, req.Apply)
}

func (e env) sinkConfig(bucket, prefix string) sink.Config {
	return sink.Config{Bucket: bucket, Prefix: prefix, Connection: sink.Connection{Region: e.region}, Requests: sink.Requests{ExpectedBucketOwner: e.owner}, StagingPrefix: prefix + "/.s3once/staging/", Files: sink.Files{Shards: 2, Compression: "gzip"}}
}

// TestAWS runs, under one fresh prefix per bucket: the preflight; a small
// pipeline and its rerun (the same files, byte for byte); a writer killed
// after a checkpoint whose token is then committed by a new writer, as a
// restarted worker would; an SSE-KMS file; a versioned bucket's commit and
// sweep leaving no version of s3once's keys. Then it removes everything it
// wrote, every version included, and checks that nothing is left.
func TestAWS(t *testing.T) {
	e := loadEnv(t)
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	run := "s3once-smoke/" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	t.Logf("writing under s3://%s/%s and s3://%s/%s", e.bucket, run, e.versioned, run)
	plain := e.client(t, s3req.Settings{ExpectedBucketOwner: e.owner})
	t.Cleanup(func() {
		for _, bk := range []string{e.bucket, e.versioned} {
			removeAll(t, plain, bk, run+"/")
		}
	})

	cfg := e.sinkConfig(e.bucket, run+"/pipeline")
	t.Run("Preflight", func(t *testing.T) {
		if err := sink.Preflight(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PipelineAndRerun", func(t *testing.T) {
		lines := make([]string, 500)
		for i := range lines {
			lines[i] = fmt.Sprintf("line %04d of the s3once smoke test", i)
		}
		write := func() map[string][]byte {
			p, s := beam.NewPipelineWithRoot()
			sink.Write(s, beam.CreateList(s, lines), cfg)
			if err := ptest.Run(p); err != nil {
				t.Fatal(err)
			}
			return objects(t, plain, e.bucket, run+"/pipeline/")
		}
		first := write()
		if len(first) == 0 {
			t.Fatal("no file written")
		}
		second := write()
		if fmt.Sprint(keys(first)) != fmt.Sprint(keys(second)) {
			t.Fatalf("rerun wrote other files: %v, then %v", keys(first), keys(second))
		}
		for k, v := range first {
			if !bytes.Equal(v, second[k]) {
				t.Errorf("%s changed on the rerun", k)
			}
		}
	})

	t.Run("KilledWriterResumed", func(t *testing.T) {
		key := run + "/killed/global-pane-0-shard-00000-of-00001-file-00000.txt"
		writeResumed(t, plain, e.bucket, key, run+"/killed/.s3once/staging/", false)
	})

	t.Run("SSEKMS", func(t *testing.T) {
		c := e.client(t, s3req.Settings{ExpectedBucketOwner: e.owner, Encryption: s3req.SSEKMS, KMSKeyID: e.kmsKey, BucketKey: true})
		key := run + "/kms/global-pane-0-shard-00000-of-00001-file-00000.txt"
		writeResumed(t, c, e.bucket, key, run+"/kms/.s3once/staging/", false)
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		if h.ServerSideEncryption != types.ServerSideEncryptionAwsKms {
			t.Errorf("the file is encrypted with %q, want aws:kms", h.ServerSideEncryption)
		}
	})

	t.Run("VersionedSweep", func(t *testing.T) {
		v, err := plain.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(e.versioned)})
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != types.BucketVersioningStatusEnabled {
			t.Fatalf("S3ONCE_AWS_VERSIONED_BUCKET %s has versioning %q, not Enabled", e.versioned, v.Status)
		}
		vcfg := e.sinkConfig(e.versioned, run+"/versioned")
		vcfg.VersionedBucket = true
		if err := sink.Preflight(ctx, vcfg); err != nil {
			t.Fatal(err)
		}
		staging := run + "/versioned/.s3once/staging/"
		writeResumed(t, plain, e.versioned, run+"/versioned/global-pane-0-shard-00000-of-00001-file-00000.txt", staging, true)
		cm, err := committer.New(plain, committer.Options{StagingPrefix: staging, Versioned: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cm.Sweep(ctx, committer.SweepOptions{Bucket: e.versioned, Prefix: run + "/versioned", StagingPrefix: staging, OlderThan: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if left := versionsUnder(t, plain, e.versioned, staging); len(left) > 0 {
			t.Errorf("versions of staging keys left: %v", left)
		}
	})
}

// writeResumed writes a file over two parts, persists (the tail in a side
// object), abandons the stream as a killed worker would, and commits it
// from the token with a new writer and committer; the file must be the bytes
// written.
func writeResumed(t *testing.T, c *s3.Client, bucket, key, staging string, versioned bool) {
	t.Helper()
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{StagingPrefix: staging, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 5<<20+1234)
	_, _ = rand.Read(data)
	st, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(data); err != nil {
		t.Fatal(err)
	}
	rr, err := st.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The worker dies here: the stream is never closed.
	w2, err := recoverable.NewWriter(c, recoverable.Options{StagingPrefix: staging, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := w2.RecoverForCommit(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := committer.New(c, committer.Options{StagingPrefix: staging, Versioned: versioned})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.CommitAfterRecovery(ctx, cr); err != nil {
		t.Fatal(err)
	}
	got := objects(t, c, bucket, key)[key]
	if !bytes.Equal(got, data) {
		t.Fatalf("%s holds %d bytes, want the %d written", key, len(got), len(data))
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// objects reads every object under prefix, skipping the staging folder.
func objects(t *testing.T, c *s3.Client, bucket, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.Contains(k, "/.s3once/") || ownkeys.IsSettingsAnywhere(k) {
				continue
			}
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			_, err = b.ReadFrom(g.Body)
			g.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[k] = b.Bytes()
		}
	}
	return out
}

func versionsUnder(t *testing.T, c *s3.Client, bucket, prefix string) []types.ObjectIdentifier {
	t.Helper()
	var ids []types.ObjectIdentifier
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
	}
	return ids
}

// removeAll aborts the uploads and deletes every version under prefix (the
// run's own, fresh prefix), then checks that nothing is left.
func removeAll(t *testing.T, c *s3.Client, bucket, prefix string) {
	ctx := context.Background()
	up := s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for up.HasMorePages() {
		page, err := up.NextPage(ctx)
		if err != nil {
			t.Errorf("list uploads: %v", err)
			break
		}
		for _, u := range page.Uploads {
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId}); err != nil {
				t.Errorf("abort %s: %v", aws.ToString(u.Key), err)
			}
		}
	}
	ids := versionsUnder(t, c, bucket, prefix)
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 1000)]
		ids = ids[len(batch):]
		if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: batch, Quiet: aws.Bool(true)}}); err != nil {
			t.Errorf("delete: %v", err)
		}
	}
	if left := versionsUnder(t, c, bucket, prefix); len(left) > 0 {
		t.Errorf("s3://%s/%s: %d versions left behind", bucket, prefix, len(left))
	}
}
