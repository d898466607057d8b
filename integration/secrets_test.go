package integration

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1pb "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// The secrets TestSecretsNowhere gives its program, each recognizable. The
// S3 secret key is the test server's own (it must sign the requests).
const (
	catalogTokenSecret = "catalogtoken-RECOGNIZABLE-81d7a0c3"
	wrongS3Secret      = "wrongsecret-RECOGNIZABLE-33b5c1d9"
)

// The environment variables integration/internal/secretlake reads its
// credentials from (its constants).
const (
	lakeAccessKeyEnv    = "SECRETLAKE_ACCESS_KEY_ID"
	lakeSecretKeyEnv    = "SECRETLAKE_SECRET_ACCESS_KEY"
	lakeCatalogTokenEnv = "SECRETLAKE_CATALOG_TOKEN"
)

// TestSecretsNowhere runs a pipeline of sink.Write (or sink.WriteWindows)
// and icebergtable.Append on a SQL catalog, with the sink's S3 keys given
// through sink.Credentials and the catalog's S3 secret key and a token
// through CatalogSecretsEnv (no session token: the test server refuses
// one), on the embedded
// runner and on a job server whose workers find the variables in their
// own environment; and runs that fail: a variable not set (the catalog's
// token, in the launcher), a wrong secret key in the launcher, and a wrong
// one on the job server's workers (S3 answers 403 there). Everything is
// logged at debug (S3ONCE_LOG_LEVEL), so the launcher logs the pipeline it
// submits. The test captures the pipeline as the runner receives it (the
// program writes it, marshalled as the universal runner does, and the test
// decodes each DoFn's payload), the launcher's output, the job server's
// output with its workers', every error, the objects written and the
// catalog's database, and finds no secret in any of them: not as it is,
// nor in hex, nor in base64.
func TestSecretsNowhere(t *testing.T) {
	t.Parallel()
	bin := lakeBinary(t)
	prism, boot := jobServerBinaries(t)
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	secrets := []string{s3test.SecretKey, catalogTokenSecret, wrongS3Secret}
	checkLeakFinder(t, secrets)

	type capture struct{ what, text string }
	var captures []capture
	add := func(what, text string) { captures = append(captures, capture{what, text}) }
	// run runs the program once, in a folder of its own, and captures what
	// it printed, the pipeline it wrote and the bucket and catalog it left.
	run := func(name string, env []string, js *jobServer, windows bool) outcome {
		t.Helper()
		dir := t.TempDir()
		bucket := srv.Bucket(t)
		dump := filepath.Join(dir, "pipeline.pb")
		args := []string{"--bucket", bucket, "--s3-endpoint", srv.Endpoint(), "--catalog", filepath.Join(dir, "catalog.db"),
			"--access-key-id", s3test.AccessKey, "--dump-pipeline", dump, fmt.Sprintf("--windows=%v", windows)}
		if js != nil {
			args = append(args, js.flags(bin, boot)...)
		}
		o := startChild(t, bin, env, nil, args...).wait(4 * time.Minute)
		add(name+": stdout", o.Stdout)
		add(name+": stderr", o.Stderr)
		if b, err := os.ReadFile(dump); err == nil {
			add(name+": the pipeline's bytes", string(b))
			add(name+": the pipeline's DoFn payloads", payloads(t, b))
		}
		if b, err := os.ReadFile(filepath.Join(dir, "catalog.db")); err == nil {
			add(name+": the catalog's database", string(b))
		}
		for k, v := range s3test.Objects(t, client, bucket, "") {
			add(name+": s3://"+bucket+"/"+k, string(v))
		}
		t.Logf("%s: %v", name, o)
		return o
	}
	good := lakeEnv(s3test.SecretKey, true)

	// The embedded runner, sink.Write's files into Append.
	o := run("embedded", good, nil, false)
	if o.Code != 0 || !strings.Contains(o.Stdout, "appended") {
		t.Fatalf("the run on the embedded runner: %v\n%s\n%s", o, o.Stdout, o.Stderr)
	}
	if !strings.Contains(o.Stderr, "Pipeline proto:") {
		t.Errorf("the launcher did not log the pipeline it submits at debug; stderr:\n%s", o.Stderr)
	}

	// The job server, sink.WriteWindows' windows into Append; its workers
	// take the variables from the job server's environment.
	js := startJobServer(t, prism, good)
	o = run("job server", good, js, true)
	if o.Code != 0 || !strings.Contains(o.Stdout, "appended") {
		t.Fatalf("the run on the job server: %v\n%s\n%s\njob server:\n%s", o, o.Stdout, o.Stderr, js.output())
	}
	if js.boots() < 1 || !strings.Contains(js.output(), "worker") {
		t.Errorf("no worker was booted, or the job server logged none of its output:\n%s", js.output())
	}

	// A variable not set: the launcher, which loads the catalog while the
	// pipeline is built, fails naming it.
	o = run("variable not set", withoutVar(good, lakeCatalogTokenEnv), nil, false)
	if o.Code != 1 || !strings.Contains(o.Stderr, "[s3once:credentials-missing]") || !strings.Contains(o.Stderr, lakeCatalogTokenEnv) {
		t.Errorf("a run without %s: %v, want exit 1 naming it with [s3once:credentials-missing]\n%s", lakeCatalogTokenEnv, o, o.Stderr)
	}

	// A wrong secret key in the launcher: S3 refuses the catalog's first
	// write.
	o = run("wrong secret, embedded", lakeEnv(wrongS3Secret, true), nil, false)
	if o.Code != 1 || !strings.Contains(o.Stderr, "SignatureDoesNotMatch") {
		t.Errorf("a run with a wrong secret key: %v, want exit 1 with S3's SignatureDoesNotMatch\n%s", o, o.Stderr)
	}

	// A wrong secret key on the job server's workers: the launcher creates
	// the table and submits, the workers' S3 calls are refused.
	wrong := startJobServer(t, prism, lakeEnv(wrongS3Secret, true))
	o = run("wrong secret, job server", good, wrong, true)
	if o.Code != 1 || !strings.Contains(o.Stderr+wrong.output(), "SignatureDoesNotMatch") {
		t.Errorf("a run with a wrong secret key on the workers: %v, want exit 1 with S3's SignatureDoesNotMatch\n%s\njob server:\n%s", o, o.Stderr, wrong.output())
	}
	if wrong.boots() < 1 {
		t.Errorf("no worker was booted by the second job server:\n%s", wrong.output())
	}
	add("job server: its output and its workers'", js.output())
	add("job server with a wrong secret: its output and its workers'", wrong.output())

	// The captures hold what the check is about: both pipelines, with the
	// variables' names in the DoFns' payloads (where a secret given by
	// value would be), and the logs.
	var pipelines, named, bytesSeen int
	for _, c := range captures {
		bytesSeen += len(c.text)
		if strings.HasSuffix(c.what, "DoFn payloads") {
			pipelines++
			if strings.Contains(c.text, lakeSecretKeyEnv) && strings.Contains(c.text, lakeCatalogTokenEnv) {
				named++
			}
		}
	}
	if pipelines < 3 || named != pipelines {
		t.Errorf("%d pipelines captured, %d naming the variables; want at least 3 (the good runs and the workers' failure), each naming the variables", pipelines, named)
	}
	for _, c := range captures {
		for _, s := range secrets {
			if form := leakedForm(c.text, s); form != "" {
				t.Errorf("%s holds the secret %q (as %s)", c.what, s, form)
			}
		}
	}
	t.Logf("%d captures, %d bytes, %d pipelines: no secret", len(captures), bytesSeen, pipelines)
}

// lakeEnv is the environment of the program and of the job servers: the
// credentials in the variables the program names, none in the AWS SDK's
// own variables or files, and everything logged at debug. The S3 secret
// key of the sink and of the catalog is secret; withToken sets the
// catalog's token.
func lakeEnv(secret string, withToken bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "SECRETLAKE_") && !strings.HasPrefix(kv, "S3ONCE_LOG_LEVEL=") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_REGION="+s3test.Region, "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true", "S3ONCE_LOG_LEVEL=debug",
		lakeAccessKeyEnv+"="+s3test.AccessKey, lakeSecretKeyEnv+"="+secret)
	if withToken {
		env = append(env, lakeCatalogTokenEnv+"="+catalogTokenSecret)
	}
	return env
}

// withoutVar is env without the variable name.
func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// payloads decodes a marshalled pipeline's DoFn payloads (the base64 of a
// Go SDK TransformPayload holding the DoFn's edge, as the runner hands
// them to the workers) and returns
// the JSON each DoFn is rebuilt from, one a line.
func payloads(t *testing.T, b []byte) string {
	t.Helper()
	var p pipepb.Pipeline
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatalf("the pipeline the program wrote: %v", err)
	}
	var out []string
	for id, tr := range p.GetComponents().GetTransforms() {
		if tr.GetSpec().GetUrn() != "beam:transform:pardo:v1" {
			continue
		}
		var pardo pipepb.ParDoPayload
		if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pardo); err != nil {
			t.Fatalf("transform %s: %v", id, err)
		}
		var tp v1pb.TransformPayload
		if err := protox.DecodeBase64(string(pardo.GetDoFn().GetPayload()), &tp); err != nil || tp.GetEdge() == nil {
			continue // not a Go DoFn
		}
		out = append(out, tp.GetEdge().GetFn().GetOpt())
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// leakedForm says in which form s is in text: as it is, in hex, or in
// base64 (standard or URL alphabet, at each of the three alignments it can
// have inside a longer encoded text); "" if in none.
func leakedForm(text, s string) string {
	if strings.Contains(text, s) {
		return "plain text"
	}
	if strings.Contains(text, hex.EncodeToString([]byte(s))) || strings.Contains(text, strings.ToUpper(hex.EncodeToString([]byte(s)))) {
		return "hex"
	}
	for off := range 3 {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString(append(make([]byte, off), s...))
			// The first characters carry bits of what precedes s, the
			// last of what follows it.
			if core := e[(off*8+5)/6 : len(e)-1]; strings.Contains(text, core) {
				return "base64"
			}
		}
	}
	return ""
}

// checkLeakFinder makes sure leakedForm finds each secret in every form it
// looks for, embedded in other text, so that the test's check can fail.
func checkLeakFinder(t *testing.T, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for off := range 3 {
			wrapped := append(append([]byte("xy"[:off]), s...), "tail"...)
			for _, text := range []string{"a " + s + " b", "0x" + hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString(wrapped), base64.URLEncoding.EncodeToString(wrapped)} {
				if leakedForm(text, s) == "" {
					t.Fatalf("the check does not find %q in %q", s, text)
				}
			}
		}
	}
}

// lakeBinary is integration/internal/secretlake, built without the race
// detector.
func lakeBinary(t testing.TB) string {
	t.Helper()
	return lakeBuild.binary(t, "integration/internal/secretlake")
}
