package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

func preflightContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// checkEmpty fails unless bucket holds no object and no upload at all: the
// preflight must remove every probe.
func checkEmpty(t *testing.T, bucket string) {
	t.Helper()
	c := testClient()
	checkClean(t, c, bucket)
	if keys := s3test.Keys(t, c, bucket, ""); len(keys) > 0 {
		t.Errorf("preflight left objects: %v", keys)
	}
}

func preflightError(t *testing.T, err error) *PreflightError {
	t.Helper()
	if err == nil {
		t.Fatal("Preflight succeeded, want an error")
	}
	if !errors.Is(err, ErrPreflight) {
		t.Errorf("error does not wrap ErrPreflight: %v", err)
	}
	// Its text alone (a log line, a runner's report) names it a preflight's.
	if !errcode.Has(errors.New(err.Error()), errcode.Preflight) {
		t.Errorf("error's message lacks %s: %v", errcode.Preflight.Token(), err)
	}
	var pe *PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("error is %T, want *PreflightError: %v", err, err)
	}
	t.Logf("preflight says:\n%v", err)
	return pe
}

func TestPreflightPasses(t *testing.T) {
	bucket := srv.Bucket(t)
	for _, prefix := range []string{"", "out", "deep/er/prefix/"} {
		cfg := testConfig(bucket, prefix)
		if err := Preflight(preflightContext(t), cfg); err != nil {
			t.Fatalf("prefix %q: %v", prefix, err)
		}
	}
	cfg := testConfig(bucket, "out")
	cfg.DisableChecksums = true
	cfg.StagingPrefix = "_tmp/staging"
	if err := Preflight(preflightContext(t), cfg); err != nil {
		t.Fatalf("without checksums, own staging prefix: %v", err)
	}
	checkEmpty(t, bucket)
}

func TestPreflightMissingBucket(t *testing.T) {
	cfg := testConfig("s3once-no-such-bucket", "out")
	pe := preflightError(t, Preflight(preflightContext(t), cfg))
	if len(pe.Problems) != 1 || !strings.Contains(pe.Problems[0].Check, "find the bucket") {
		t.Errorf("want one problem about the bucket, got %+v", pe.Problems)
	}
	if len(pe.Unchecked) == 0 {
		t.Error("the checks after the missing bucket are not listed as unchecked")
	}
}

func TestPreflightWrongCredentials(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	t.Setenv("S3ONCE_TEST_WRONG_SECRET", "not-the-secret")
	cfg.Credentials.SecretAccessKeyEnv = "S3ONCE_TEST_WRONG_SECRET"
	pe := preflightError(t, Preflight(preflightContext(t), cfg))
	if len(pe.Problems) != 1 || pe.Problems[0].Check != "authenticate" {
		t.Errorf("want one problem about the credentials, got %+v", pe.Problems)
	}
	checkEmpty(t, bucket)
}

// TestPreflightCredentialsNotSet: a Config naming an environment variable
// that is not set here fails with one problem that names the variable and
// carries [s3once:credentials-missing], before any S3 call.
func TestPreflightCredentialsNotSet(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.Credentials.SecretAccessKeyEnv = "S3ONCE_TEST_NEVER_SET_SECRET"
	pe := preflightError(t, Preflight(preflightContext(t), cfg))
	if len(pe.Problems) != 1 || !errors.Is(pe.Problems[0].Err, ErrCredentialsMissing) ||
		!strings.Contains(pe.Error(), "S3ONCE_TEST_NEVER_SET_SECRET") || !strings.Contains(pe.Error(), errcode.CredentialsMissing.Token()) {
		t.Errorf("want one problem naming the variable with %s, got %v", errcode.CredentialsMissing.Token(), pe)
	}
	checkEmpty(t, bucket)
}

func TestPreflightUnreachable(t *testing.T) {
	port, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("some-bucket", "out")
	cfg.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg.MaxAttempts = 1
	began := time.Now()
	pe := preflightError(t, Preflight(preflightContext(t), cfg))
	if len(pe.Problems) != 1 || pe.Problems[0].Check != "reach the S3 endpoint" {
		t.Errorf("want one problem about the endpoint, got %+v", pe.Problems)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("a refused connection took %v to report", d)
	}
}

// A configuration problem and an S3 problem are reported together.
func TestPreflightReportsConfigAndS3Together(t *testing.T) {
	cfg := testConfig("s3once-no-such-bucket", "out")
	cfg.Shards = -1
	cfg.Compression = "lzma"
	err := Preflight(preflightContext(t), cfg)
	pe := preflightError(t, err)
	if len(pe.Problems) != 2 {
		t.Fatalf("want the configuration and the bucket, got %d problems: %+v", len(pe.Problems), pe.Problems)
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Error("error does not wrap ErrInvalidConfig")
	}
	for _, want := range []string{"Shards -1", "lzma", "find the bucket"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q", want)
		}
	}
}

func TestPreflightUnusableConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		why string // what the note on the unchecked calls must say
	}{
		{Config{Bucket: ""}, "bucket name"},
		{Config{Bucket: "ab"}, "bucket name"},
		{Config{Bucket: "bucket", Connection: Connection{Endpoint: "ftp://x"}}, "endpoint"},
		{Config{Bucket: "bucket", Prefix: "/abs"}, "prefixes"},
		{Config{Bucket: "bucket", Connection: Connection{Credentials: Credentials{AccessKeyIDEnv: "ONLY_HALF"}}}, "credentials"},
		{Config{Bucket: "bucket", Connection: Connection{Credentials: Credentials{AccessKeyIDEnv: "AKIAABCDEFGHIJKLMNOP", SecretAccessKeyEnv: "S"}}}, "credentials"},
	} {
		pe := preflightError(t, Preflight(preflightContext(t), tc.cfg))
		if len(pe.Problems) != 1 || !errors.Is(pe.Problems[0].Err, ErrInvalidConfig) || len(pe.Unchecked) != 1 {
			t.Errorf("%+v: want one configuration problem and the S3 calls unchecked, got %+v", tc.cfg, pe)
			continue
		}
		if !strings.Contains(pe.Unchecked[0], tc.why) {
			t.Errorf("%+v: the unchecked calls' note %q does not name the %s", tc.cfg, pe.Unchecked[0], tc.why)
		}
	}
}

// denyAPI answers some operations with 403 AccessDenied, as a bucket policy
// would, and strips If-None-Match when asked to, as a server that ignores
// it would.
type denyAPI struct {
	s3API
	deny        map[s3fault.Op]bool
	ignoreCondn bool
}

func (d *denyAPI) denied(op s3fault.Op) error {
	if d.deny[op] {
		return s3fault.APIError(op, http.StatusForbidden, "AccessDenied", "Access Denied")
	}
	return nil
}

func (d *denyAPI) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if err := d.denied(s3fault.UploadPart); err != nil {
		return nil, err
	}
	return d.s3API.UploadPart(ctx, in, o...)
}

func (d *denyAPI) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := d.denied(s3fault.DeleteObject); err != nil {
		return nil, err
	}
	return d.s3API.DeleteObject(ctx, in, o...)
}

func (d *denyAPI) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := d.denied(s3fault.HeadObject); err != nil {
		return nil, err
	}
	return d.s3API.HeadObject(ctx, in, o...)
}

func (d *denyAPI) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if d.ignoreCondn {
		cp := *in
		cp.IfNoneMatch = nil
		in = &cp
	}
	return d.s3API.PutObject(ctx, in, o...)
}

func (d *denyAPI) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if d.ignoreCondn {
		cp := *in
		cp.IfNoneMatch = nil
		in = &cp
	}
	return d.s3API.CompleteMultipartUpload(ctx, in, o...)
}

func testSettings(t *testing.T, bucket, prefix string) settings {
	t.Helper()
	s, err := testConfig(bucket, prefix).settings()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every refused call is reported, each with the permission it needs, and
// the probes are still removed.
func TestPreflightReportsEveryDeniedCall(t *testing.T) {
	bucket := srv.Bucket(t)
	api := &denyAPI{s3API: testClient(), deny: map[s3fault.Op]bool{
		s3fault.HeadObject:   true,
		s3fault.UploadPart:   true,
		s3fault.DeleteObject: true,
	}}
	s := testSettings(t, bucket, "out")
	err := preflight(preflightContext(t), api, s, &PreflightError{Bucket: bucket})
	pe := preflightError(t, err)
	perms := map[string]int{}
	for _, p := range pe.Problems {
		perms[p.Permission]++
	}
	// UploadPart is refused twice: under the output prefix and under the
	// staging prefix (where the completion probe then cannot run, nor the
	// HEAD of the object it would have made).
	want := map[string]int{"s3:GetObject": 1, "s3:PutObject": 2, "s3:DeleteObject": 1}
	for perm, n := range want {
		if perms[perm] != n {
			t.Errorf("%d problems need %s, want %d (problems: %+v)", perms[perm], perm, n, pe.Problems)
		}
	}
	if len(pe.Problems) != 4 {
		t.Errorf("got %d problems, want 4", len(pe.Problems))
	}
	// The side object the denied DeleteObject left is removed by the
	// DeleteObjects of the clean-up.
	if len(pe.Leftovers) != 0 {
		t.Errorf("leftovers: %v", pe.Leftovers)
	}
	checkEmpty(t, bucket)
}

// A server that ignores If-None-Match fails the preflight, for PutObject and
// for CompleteMultipartUpload.
func TestPreflightConditionalWritesIgnored(t *testing.T) {
	bucket := srv.Bucket(t)
	api := &denyAPI{s3API: testClient(), ignoreCondn: true}
	err := preflight(preflightContext(t), api, testSettings(t, bucket, "out"), &PreflightError{Bucket: bucket})
	pe := preflightError(t, err)
	if !errors.Is(err, committer.ErrConditionalWritesUnsupported) {
		t.Error("error does not wrap committer.ErrConditionalWritesUnsupported")
	}
	var complete, put bool
	for _, p := range pe.Problems {
		complete = complete || strings.Contains(p.Check, "second completion")
		put = put || strings.Contains(p.Check, "conditional PutObject")
	}
	if !complete || !put {
		t.Errorf("want both the completion and the PutObject probes reported, got %+v", pe.Problems)
	}
	checkEmpty(t, bucket)
}

// Every probe is removed when the caller's context ends halfway.
func TestPreflightCancelledCleansUp(t *testing.T) {
	bucket := srv.Bucket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := &cancelAfter{s3API: testClient(), cancel: cancel}
	err := preflight(ctx, api, testSettings(t, bucket, "out"), &PreflightError{Bucket: bucket})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want a cancelled preflight", err)
	}
	checkEmpty(t, bucket)
	if out, lerr := testClient().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}); lerr == nil && len(out.Uploads) > 0 {
		t.Errorf("uploads left: %d", len(out.Uploads))
	}
}

// cancelAfter cancels the context right after the first part is uploaded,
// while an upload is open.
type cancelAfter struct {
	s3API
	cancel context.CancelFunc
}

func (c *cancelAfter) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	out, err := c.s3API.UploadPart(ctx, in, o...)
	c.cancel()
	return out, err
}

// TestPreflightOneAttemptPerProbe: each probe is made once. A probe whose
// call fails as a transient failure would (the request never sent, or its
// answer lost) is reported at once, not made again: the call after it in
// the log is never the same call, and the preflight fails.
func TestPreflightOneAttemptPerProbe(t *testing.T) {
	// Not AbortMultipartUpload: the clean-up aborts an upload whose probe
	// failed to, as it removes every probe's leftovers.
	ops := []s3fault.Op{s3fault.ListObjectsV2, s3fault.CreateMultipartUpload, s3fault.UploadPart, s3fault.ListParts,
		s3fault.HeadObject, s3fault.GetObject, s3fault.PutObject, s3fault.DeleteObject, s3fault.CompleteMultipartUpload}
	for _, op := range ops {
		for _, kind := range []s3fault.Kind{s3fault.BeforeSend, s3fault.LostResponse} {
			t.Run(fmt.Sprintf("%s-%v", op, kind), func(t *testing.T) {
				bucket := srv.Bucket(t)
				f := s3fault.New(testClient())
				f.On(op, s3fault.Nth(1, kind))
				if err := preflight(preflightContext(t), f, testSettings(t, bucket, "out"), &PreflightError{Bucket: bucket}); err == nil {
					t.Fatalf("the preflight passed although its first %s failed", op)
				}
				calls := f.Calls()
				failed := -1
				for i, c := range calls {
					if c.Op == op && c.N == 1 {
						failed = i
					}
				}
				if failed < 0 {
					t.Fatalf("the preflight made no %s call", op)
				}
				if next := failed + 1; next < len(calls) && calls[next].Op == op && calls[next].Key == calls[failed].Key {
					t.Errorf("the failed %s of %s was made again", op, calls[failed].Key)
				}
			})
		}
	}
}
