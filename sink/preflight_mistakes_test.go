package sink

import (
	"fmt"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// onlyProblem checks that err reports exactly one problem, with no
// permission hint and no probes left behind, whose text says each of want.
func onlyProblem(t *testing.T, err error, want ...string) {
	t.Helper()
	pe := preflightError(t, err)
	if len(pe.Problems) != 1 {
		t.Fatalf("%d problems, want 1:\n%v", len(pe.Problems), err)
	}
	p := pe.Problems[0]
	if p.Permission != "" {
		t.Errorf("the problem names the permission %s, which is not the cause", p.Permission)
	}
	if len(pe.Leftovers) > 0 || strings.Contains(err.Error(), "left behind") {
		t.Errorf("probes reported left behind, though nothing was written:\n%v", err)
	}
	if strings.Contains(err.Error(), "needs s3:") {
		t.Errorf("the message carries a permission hint:\n%v", err)
	}
	for _, w := range want {
		if !strings.Contains(p.String(), w) {
			t.Errorf("the problem %q does not say %q", p, w)
		}
	}
}

// No credentials anywhere: one problem that says so and how to give them.
func TestPreflightNoCredentials(t *testing.T) {
	port, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s3test.NoCredentials(t, fmt.Sprintf("http://127.0.0.1:%d", port))
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.Credentials = Credentials{}
	err = Preflight(preflightContext(t), cfg)
	onlyProblem(t, err, "no AWS credentials", "AWS_ACCESS_KEY_ID")
	checkEmpty(t, bucket)
}

// A bucket name that the server refuses (legacy us-east-1 names such as
// My_Bucket pass the local check): one problem naming the bucket.
func TestPreflightInvalidBucketName(t *testing.T) {
	cfg := testConfig("My_Bucket", "out")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("My_Bucket refused locally: %v", err)
	}
	err := Preflight(preflightContext(t), cfg)
	onlyProblem(t, err, `"My_Bucket"`, "bucket name")
}

// An endpoint with a path: one problem that says to drop the path.
func TestPreflightEndpointWithPath(t *testing.T) {
	bucket := srv.Bucket(t)
	for _, ep := range []string{endpoint + "/demo", endpoint + "/" + bucket + "/"} {
		cfg := testConfig(bucket, "out")
		cfg.Endpoint = ep
		err := Preflight(preflightContext(t), cfg)
		onlyProblem(t, err, "has a path", "give the server's address alone, "+endpoint)
	}
	checkEmpty(t, bucket)
}

// A stream option out of bounds is one problem of the configuration, with
// the configuration's code alone, not the stream's inside it.
func TestInvalidStreamOptionCarriesOneCode(t *testing.T) {
	cfg := testConfig("bucket", "out")
	cfg.PartSize = 1 << 20
	err := cfg.Validate()
	if err == nil {
		t.Fatal("a 1 MiB PartSize passed")
	}
	if n := strings.Count(err.Error(), "[s3once:"); n != 1 || !strings.Contains(err.Error(), "PartSize") {
		t.Errorf("%q carries %d codes, want 1, and should name PartSize", err, n)
	}
}
