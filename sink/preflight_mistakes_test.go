package sink

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/s3test"
)

// noCredentials empties the standard credential chain for the test: no
// environment keys, no shared files, and an instance-metadata endpoint that
// refuses at once.
func noCredentials(t *testing.T) {
	t.Helper()
	port, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_CONFIG_FILE": none,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT": fmt.Sprintf("http://127.0.0.1:%d", port),
	} {
		t.Setenv(k, v)
	}
}

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
	noCredentials(t)
	bucket := srv.Bucket(t)
	cfg := testConfig(bucket, "out")
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
	err := Preflight(preflightContext(t), cfg)
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
