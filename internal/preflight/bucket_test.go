package preflight_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/preflight"
	"github.com/s3once/s3once/internal/s3req"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// A bucket whose policy refuses uploads without SSE-KMS headers: the
// preflight says so and names the setting; with the setting, it passes; a
// bucket that refuses for want of a permission gets no such advice.
func TestRunNamesRequiredEncryption(t *testing.T) {
	bucket := srv.Bucket(t)
	pol := &s3fault.Policy{RequireEncryption: s3req.SSEKMS}
	r := preflight.Run(testContext(t), settingsClient(srv.Endpoint(), s3req.Settings{}, pol), target(bucket))
	failed(t, r)
	var named bool
	for _, pr := range r.Problems {
		if strings.Contains(pr.Hint, `set Config.Encryption to "aws:kms"`) {
			named = true
			if pr.Permission != "" {
				t.Errorf("a refusal for want of encryption is blamed on permission %s", pr.Permission)
			}
		}
	}
	if !named {
		t.Errorf("no problem names the setting: %+v", r.Problems)
	}

	tg := target(bucket)
	tg.Encryption = s3req.SSEKMS
	req := s3req.Settings{Encryption: s3req.SSEKMS}
	if r := preflight.Run(testContext(t), settingsClient(srv.Endpoint(), req, pol), tg); len(r.Problems) != 0 {
		t.Errorf("with Encryption aws:kms: %+v", r.Problems)
	}
	checkEmpty(t, bucket)

	api := &denyAPI{API: testClient(), deny: map[s3fault.Op]bool{s3fault.UploadPart: true}}
	r = preflight.Run(testContext(t), api, target(bucket))
	failed(t, r)
	for _, pr := range r.Problems {
		if strings.Contains(pr.String(), "Config.Encryption") {
			t.Errorf("a plain refusal gets encryption advice: %s", pr)
		}
	}
	checkEmpty(t, bucket)
}

// A configured owner that does not own the bucket: versitygw refuses the
// calls as S3 does, and the preflight names ExpectedBucketOwner.
func TestRunNamesTheOwner(t *testing.T) {
	bucket := srv.Bucket(t)
	for _, tc := range []struct {
		owner string
		fails bool
	}{{"444455556666", true}, {s3test.AccessKey, false}} { // versitygw's owner ID
		tg := target(bucket)
		tg.ExpectedBucketOwner = tc.owner
		api := settingsClient(srv.Endpoint(), s3req.Settings{ExpectedBucketOwner: tc.owner}, &s3fault.Policy{})
		r := preflight.Run(testContext(t), api, tg)
		var named bool
		for _, pr := range r.Problems {
			named = named || strings.Contains(pr.Hint, "Config.ExpectedBucketOwner "+tc.owner)
		}
		if tc.fails != named || !tc.fails && len(r.Problems) > 0 {
			t.Errorf("owner %s: %+v", tc.owner, r.Problems)
		}
	}
}

// A versioned bucket (MinIO): refused without VersionedBucket, with a hint
// naming it; accepted with it.
func TestRunVersionedBucket(t *testing.T) {
	mio := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	c := mio.Client(s3test.ClientOptions{MaxAttempts: 3})
	bucket := mio.Bucket(t)
	tg := target(bucket)
	tg.Endpoint = mio.Endpoint()
	if r := preflight.Run(testContext(t), c, tg); len(r.Problems) != 0 {
		t.Fatalf("unversioned bucket: %+v", r.Problems)
	}
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	}); err != nil {
		t.Fatal(err)
	}
	r := preflight.Run(testContext(t), c, tg)
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0].Hint, "set Config.VersionedBucket") {
		t.Fatalf("versioned bucket without VersionedBucket: %+v", r.Problems)
	}
	tg.VersionedBucket = true
	if r := preflight.Run(testContext(t), c, tg); len(r.Problems) != 0 {
		t.Errorf("versioned bucket with VersionedBucket: %+v", r.Problems)
	}
}
