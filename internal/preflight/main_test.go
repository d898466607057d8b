package preflight_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/preflight"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/s3req"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// srv is the versitygw every test of the package shares; each test has its
// own bucket.
var srv *s3test.Server

func TestMain(m *testing.M) {
	var err error
	srv, err = s3test.Launch(s3test.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testClient() *s3.Client { return srv.Client(s3test.ClientOptions{MaxAttempts: 3}) }

// target is a valid sink's target under "out" in bucket, with a settings
// marker check that finds nothing wrong.
func target(bucket string) preflight.Target {
	return preflight.Target{
		Bucket: bucket, Endpoint: srv.Endpoint(), Prefix: "out", StagingPrefix: s3call.DefaultStagingPrefix,
		CheckFolder: func(context.Context, *s3bucket.Client) error { return nil },
	}
}

// settingsClient is a client at endpoint ep carrying the request settings
// req, as the sink builds it, sending through pol.
func settingsClient(ep string, req s3req.Settings, pol *s3fault.Policy) *s3.Client {
	return s3.New(s3.Options{
		Region: s3test.Region, BaseEndpoint: aws.String(ep), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		RetryMaxAttempts: 1, HTTPClient: pol,
	}, req.Apply)
}

// checkEmpty fails unless bucket holds no object and no upload at all: the
// preflight must remove every probe.
func checkEmpty(t *testing.T, bucket string) {
	t.Helper()
	c := testClient()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list uploads: %v", err)
	}
	if n := len(out.Uploads); n > 0 {
		t.Errorf("preflight left %d multipart uploads", n)
	}
	if keys := s3test.Keys(t, c, bucket, ""); len(keys) > 0 {
		t.Errorf("preflight left objects: %v", keys)
	}
}

// failed fails unless r holds a problem, and logs the report.
func failed(t *testing.T, r preflight.Report) {
	t.Helper()
	if len(r.Problems) == 0 {
		t.Fatalf("the preflight found no problem (unchecked %v, leftovers %v)", r.Unchecked, r.Leftovers)
	}
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString("\n  - " + p.String())
	}
	t.Logf("preflight says:%s", b.String())
}

// denyAPI answers some operations with 403 AccessDenied, as a bucket policy
// would, and strips If-None-Match when asked to, as a server that ignores
// it would.
type denyAPI struct {
	preflight.API
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
	return d.API.UploadPart(ctx, in, o...)
}

func (d *denyAPI) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := d.denied(s3fault.DeleteObject); err != nil {
		return nil, err
	}
	return d.API.DeleteObject(ctx, in, o...)
}

func (d *denyAPI) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := d.denied(s3fault.HeadObject); err != nil {
		return nil, err
	}
	return d.API.HeadObject(ctx, in, o...)
}

func (d *denyAPI) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if d.ignoreCondn {
		cp := *in
		cp.IfNoneMatch = nil
		in = &cp
	}
	return d.API.PutObject(ctx, in, o...)
}

func (d *denyAPI) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if d.ignoreCondn {
		cp := *in
		cp.IfNoneMatch = nil
		in = &cp
	}
	return d.API.CompleteMultipartUpload(ctx, in, o...)
}
