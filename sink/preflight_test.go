package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3once/s3once/errcode"
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

// The client the sink builds for itself (Preflight's, the workers') carries
// the request settings: under another owner, versitygw refuses its calls.
func TestSinkClientCarriesRequestSettings(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.ExpectedBucketOwner = "444455556666"
	if err := Preflight(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("preflight under another owner through the sink's own client: %v, want AccessDenied", err)
	}
	cfg.ExpectedBucketOwner = s3test.AccessKey
	if err := Preflight(context.Background(), cfg); err != nil {
		t.Errorf("preflight under the right owner: %v", err)
	}
}

// A problem reads as one line: the check, its target, the failure without
// the SDK's request ids, the permission it needs and the hint.
func TestPreflightProblemString(t *testing.T) {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 403}}
	err := &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}},
		RequestID:     "REQ123",
	}}
	p := PreflightProblem{Check: "put a side object", Target: "s3://b/k", Permission: "s3:PutObject", Hint: "grant it", Err: err}
	want := "put a side object (s3://b/k): S3 PutObject answered HTTP 403 AccessDenied: Access Denied [needs s3:PutObject]; grant it"
	if got := p.String(); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
