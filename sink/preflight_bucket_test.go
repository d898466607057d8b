package sink

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// policyClient is the client the sink builds for s (request settings
// included), sending through pol, at endpoint ep.
func policyClient(t *testing.T, ep string, s settings, pol *s3fault.Policy) *s3.Client {
	t.Helper()
	req, err := s.Requests.build()
	if err != nil {
		t.Fatal(err)
	}
	return s3.New(s3.Options{
		Region: s3test.Region, BaseEndpoint: aws.String(ep), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		RetryMaxAttempts: 1, HTTPClient: pol,
	}, req.Apply)
}

func preflightWith(t *testing.T, ep string, cfg Config, pol *s3fault.Policy) error {
	t.Helper()
	s, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	return preflight(context.Background(), policyClient(t, ep, s, pol), s, &PreflightError{Bucket: cfg.Bucket})
}

// A bucket whose policy refuses uploads without SSE-KMS headers: the
// preflight says so and names the setting; with the setting, it passes; a
// bucket without the requirement gets no such advice.
func TestPreflightNamesRequiredEncryption(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	err := preflightWith(t, endpoint, cfg, &s3fault.Policy{RequireEncryption: EncryptionSSEKMS})
	var pe *PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("preflight of a bucket requiring SSE-KMS: %v, want a PreflightError", err)
	}
	if !strings.Contains(err.Error(), `set Config.Encryption to "aws:kms"`) {
		t.Errorf("the error does not name the setting:\n%v", err)
	}
	for _, pr := range pe.Problems {
		if strings.Contains(pr.Hint, "Config.Encryption") && pr.Permission != "" {
			t.Errorf("a refusal for want of encryption is blamed on permission %s", pr.Permission)
		}
	}

	cfg.Encryption = EncryptionSSEKMS
	if err := preflightWith(t, endpoint, cfg, &s3fault.Policy{RequireEncryption: EncryptionSSEKMS}); err != nil {
		t.Errorf("with Encryption aws:kms: %v", err)
	}
	if keys := s3test.Keys(t, testClient(), bucket, ""); len(keys) != 0 {
		t.Errorf("probes left: %v", keys)
	}

	// A bucket that refuses for want of a permission, not of encryption.
	cfg.Encryption = ""
	api := &denyAPI{s3API: testClient(), deny: map[s3fault.Op]bool{s3fault.UploadPart: true}}
	err = preflight(context.Background(), api, testSettings(t, bucket, "out"), &PreflightError{Bucket: bucket})
	if err == nil || strings.Contains(err.Error(), "Config.Encryption") {
		t.Errorf("a plain refusal: %v; want a problem without encryption advice", err)
	}
}

// A configured owner that does not own the bucket: versitygw refuses the
// calls as S3 does, and the preflight names ExpectedBucketOwner.
func TestPreflightNamesTheOwner(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.ExpectedBucketOwner = "444455556666"
	err := preflightWith(t, endpoint, cfg, &s3fault.Policy{})
	if err == nil || !strings.Contains(err.Error(), "Config.ExpectedBucketOwner 444455556666") {
		t.Fatalf("preflight under another owner: %v", err)
	}
	cfg.ExpectedBucketOwner = s3test.AccessKey // versitygw's owner ID
	if err := preflightWith(t, endpoint, cfg, &s3fault.Policy{}); err != nil {
		t.Errorf("preflight under the right owner: %v", err)
	}
}

// A versioned bucket (MinIO): refused without VersionedBucket, with a hint
// naming it; accepted with it.
func TestPreflightVersionedBucket(t *testing.T) {
	mio := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	c := mio.Client(s3test.ClientOptions{MaxAttempts: 3})
	bucket := mio.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.Endpoint = mio.Endpoint()
	if err := preflightWith(t, mio.Endpoint(), cfg, &s3fault.Policy{}); err != nil {
		t.Fatalf("unversioned bucket: %v", err)
	}
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	}); err != nil {
		t.Fatal(err)
	}
	err := preflightWith(t, mio.Endpoint(), cfg, &s3fault.Policy{})
	if err == nil || !strings.Contains(err.Error(), "set Config.VersionedBucket") {
		t.Fatalf("versioned bucket without VersionedBucket: %v", err)
	}
	cfg.VersionedBucket = true
	if err := preflightWith(t, mio.Endpoint(), cfg, &s3fault.Policy{}); err != nil {
		t.Errorf("versioned bucket with VersionedBucket: %v", err)
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
