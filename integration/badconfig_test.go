package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// Bad input and bad configuration: the batch example exits non-zero with a
// message that names the problem, and writes nothing: no object, no
// multipart upload, no side object (the preflight's probes included).
func TestBadConfiguration(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	good := childEnv(s3test.AccessKey, s3test.SecretKey)
	closed, err := s3test.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	small := []string{"--records", "3000", "--topics", "2", "--shards", "2"}

	cases := []struct {
		name     string
		env      []string
		bucket   string // "" for a fresh one
		endpoint string // "" for the server
		args     []string
		code     int
		says     []string
	}{
		{name: "unreachable endpoint", endpoint: fmt.Sprintf("http://127.0.0.1:%d", closed), args: small,
			code: 3, says: []string{"reach the S3 endpoint", "connection refused"}},
		{name: "wrong credentials", env: childEnv(s3test.AccessKey, "not-the-secret"), args: small,
			code: 3, says: []string{"authenticate", "SignatureDoesNotMatch"}},
		{name: "unknown access key", env: childEnv("nobody", "nothing-at-all"), args: small,
			code: 3, says: []string{"authenticate"}},
		{name: "no credentials at all", env: childEnv("", ""), args: small,
			code: 3, says: []string{"find credentials: no AWS credentials found", "AWS_ACCESS_KEY_ID"}},
		{name: "bucket name the server refuses", bucket: "My_Bucket", args: small,
			code: 3, says: []string{"use the bucket name", `"My_Bucket"`}},
		{name: "endpoint with a path", endpoint: "PATH", args: small,
			code: 2, says: []string{"has a path", "give the server's address alone"}},
		{name: "S3 endpoint given as Beam's --endpoint", args: append([]string{"--endpoint", "ENDPOINT"}, small...),
			code: 2, says: []string{"looks like an S3 endpoint", "--s3-endpoint"}},
		{name: "missing bucket", bucket: "s3once-no-such-bucket", args: small,
			code: 3, says: []string{"find the bucket", "NoSuchBucket"}},
		{name: "absolute prefix", args: append([]string{"--prefix", "/abs"}, small...),
			code: 2, says: []string{"must not start with '/'"}},
		{name: "empty prefix segment", args: append([]string{"--prefix", "a//b"}, small...),
			code: 2, says: []string{"empty segment"}},
		{name: "dot-dot prefix", args: append([]string{"--prefix", "out/../up"}, small...),
			code: 2, says: []string{`".." segment`}},
		{name: "unknown compression", args: append([]string{"--compression", "lzma"}, small...),
			code: 2, says: []string{`unknown Compression "lzma"`}},
		{name: "record larger than a file", args: []string{"--records", "200", "--min-words", "20000", "--max-words", "20000",
			"--max-file-bytes", "65536", "--max-batch-bytes", "1048576"},
			code: 1, says: []string{"exceeds MaxFileBytes (65536)", "raise MaxFileBytes"}},
		// A shard larger than a batch is spilled and split into up to 64
		// sub-batches; one too large even for that is refused, whole.
		{name: "shard too large for 64 sub-batches", args: []string{"--records", "6000", "--topics", "1", "--shards", "1",
			"--max-batch-bytes", "16384"},
			code: 1, says: []string{"too many for 64 sub-batches", "raise Shards"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := tc.bucket
			if bucket == "" {
				bucket = srv.Bucket(t)
			}
			env := tc.env
			if env == nil {
				env = good
			}
			if tc.name == "no credentials at all" {
				env = withoutKeys(env)
			}
			endpoint := tc.endpoint
			switch endpoint {
			case "":
				endpoint = srv.Endpoint()
			case "PATH":
				endpoint = srv.Endpoint() + "/" + bucket
			}
			var caseArgs []string
			for _, a := range tc.args {
				caseArgs = append(caseArgs, strings.ReplaceAll(a, "ENDPOINT", srv.Endpoint()))
			}
			args := append([]string{"--bucket", bucket, "--s3-endpoint", endpoint, "--timeout", "2m"}, caseArgs...)
			o := startChild(t, bin, env, nil, args...).wait(3 * time.Minute)
			last := lastLine(o.Stderr)
			t.Logf("%v: %s", o, last)
			if o.Code != tc.code {
				t.Errorf("%v, want exit %d\nstderr:\n%s", o, tc.code, o.Stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(o.Stderr, s) {
					t.Errorf("the message does not say %q:\n%s", s, o.Stderr)
				}
			}
			if !strings.HasPrefix(last, "s3once batch:") && !strings.HasPrefix(o.Stderr, "s3once batch:") {
				t.Errorf("no clear closing message:\n%s", o.Stderr)
			}
			// A failure inside the runner: the line to act on comes last,
			// and only there.
			if _, cause, ok := strings.Cut(last, "pipeline failed after "); ok && tc.code == 1 {
				_, cause, _ = strings.Cut(cause, ": ")
				if n := strings.Count(o.Stderr, cause); n != 1 {
					t.Errorf("the failure %q shows %d times, want once, last:\n%s", cause, n, o.Stderr)
				}
			}
			if strings.Contains(o.Stderr, "panic") || strings.Contains(o.Stderr, "goroutine ") {
				t.Errorf("the program panicked:\n%s", o.Stderr)
			}
			if tc.bucket == "" {
				if keys := s3test.Keys(t, client, bucket, ""); len(keys) > 0 {
					t.Errorf("objects written: %v", keys)
				}
				if ups := s3test.Uploads(t, client, bucket); len(ups) > 0 {
					t.Errorf("uploads left: %v", ups)
				}
			}
			if tc.code == 3 && !strings.Contains(o.Stderr, "no data was written") {
				t.Errorf("the preflight's message does not say that nothing was written:\n%s", o.Stderr)
			}
		})
	}
}

// withoutKeys drops the access keys from env: the SDK's chain then finds no
// credentials at all (shared files and instance metadata are off).
func withoutKeys(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") || strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
