package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// srv is the S3 server every test of the package shares; each test has its
// own bucket. endpoint is its URL; a child process started by
// TestCrashRerun gets it from the environment instead, and starts no server.
var (
	srv      *s3test.Server
	endpoint string
)

// childEnv, when set, makes the test binary a child of TestCrashRerun.
const childEnv = "S3ONCE_SINK_CHILD"

func TestMain(m *testing.M) {
	if ep := os.Getenv(childEnv); ep != "" {
		endpoint = ep
		os.Exit(ptest.MainRet(m))
	}
	// Fuzzing a decoder needs no server: `make fuzz` runs on a machine
	// without the tools installed.
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(ptest.MainRet(m))
	}
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(ptest.MainRet(m))
	}
	var err error
	srv, err = s3test.Launch(s3test.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	endpoint = srv.Endpoint()
	code := ptest.MainRet(m)
	srv.Stop()
	os.Exit(code)
}

// testConfig points a Config at the test server.
func testConfig(bucket, prefix string) Config {
	return Config{
		Bucket: bucket,
		Prefix: prefix,
		Connection: Connection{
			Endpoint:    endpoint,
			Region:      s3test.Region,
			PathStyle:   true,
			Credentials: Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv},
		},
	}
}

func testClient() *s3.Client { return s3test.NewClient(endpoint, s3test.ClientOptions{MaxAttempts: 3}) }

// decompress undoes a file's compression, by its suffix.
func decompress(t testing.TB, key string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch {
	case strings.HasSuffix(key, ".gz"):
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		r = zr
	case strings.HasSuffix(key, ".zst"):
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decompress %s: %v", key, err)
	}
	return out
}

// lines splits a file's records (newline-terminated). A file must end with a
// newline: a missing one means a cut-off file.
func lines(t testing.TB, key string, b []byte) []string {
	t.Helper()
	if len(b) == 0 {
		t.Fatalf("%s is empty", key)
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline (cut off?)", key)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
}

// checkClean checks that no upload, side object or probe is left in bucket.
func checkClean(t testing.TB, c *s3.Client, bucket string) {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list uploads: %v", err)
	}
	if n := len(out.Uploads); n > 0 {
		var ks []string
		for _, u := range out.Uploads {
			ks = append(ks, aws.ToString(u.Key))
		}
		t.Errorf("%d multipart uploads left: %v", n, ks)
	}
	if left := s3test.Keys(t, c, bucket, ".s3once/"); len(left) > 0 {
		t.Errorf("%d side objects left: %v", len(left), left)
	}
}

// sameMultiset fails unless got and want hold the same strings, counted.
func sameMultiset(t testing.TB, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	sort.Strings(g)
	sort.Strings(w)
	if len(g) != len(w) {
		t.Fatalf("got %d records, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("records differ: first difference at sorted position %d: got %q, want %q", i, g[i], w[i])
		}
	}
}

func init() {
	register.DoFn1x0[FileResult](&collectFn{})
	register.DoFn1x0[WindowFiles](&collectWindowsFn{})
}

// collected holds the FileResults of each test's pipeline, by test name:
// prism runs DoFns in this process.
var (
	collectedMu sync.Mutex
	collected   = map[string][]FileResult{}
)

type collectFn struct{ ID string }

func (f *collectFn) ProcessElement(r FileResult) {
	collectedMu.Lock()
	defer collectedMu.Unlock()
	collected[f.ID] = append(collected[f.ID], r)
}

// collect gathers results under t's name; results returns them.
func collect(t testing.TB, s beam.Scope, col beam.PCollection) {
	collectedMu.Lock()
	delete(collected, t.Name())
	collectedMu.Unlock()
	beam.ParDo0(s, &collectFn{ID: t.Name()}, col)
}

func results(t testing.TB) []FileResult {
	collectedMu.Lock()
	defer collectedMu.Unlock()
	return slices.Clone(collected[t.Name()])
}

// collectedWindows holds the WindowFiles of each test's pipeline, by test
// name.
var collectedWindows = map[string][]WindowFiles{}

type collectWindowsFn struct{ ID string }

func (f *collectWindowsFn) ProcessElement(w WindowFiles) {
	collectedMu.Lock()
	defer collectedMu.Unlock()
	collectedWindows[f.ID] = append(collectedWindows[f.ID], w)
}

// collectWindows gathers WriteWindows' windows under t's name.
func collectWindows(t testing.TB, s beam.Scope, col beam.PCollection) {
	collectedMu.Lock()
	delete(collectedWindows, t.Name())
	collectedMu.Unlock()
	beam.ParDo0(s, &collectWindowsFn{ID: t.Name()}, col)
}

// checkWindows checks that WriteWindows emitted each window once, with
// exactly the keys want gives for it (sorted).
func checkWindows(t testing.TB, want map[string][]string) {
	t.Helper()
	collectedMu.Lock()
	got := slices.Clone(collectedWindows[t.Name()])
	collectedMu.Unlock()
	seen := map[string]bool{}
	for _, w := range got {
		if seen[w.Window] {
			t.Errorf("window %s emitted twice", w.Window)
		}
		seen[w.Window] = true
		var keys []string
		for _, f := range w.Files {
			if f.Window != w.Window {
				t.Errorf("window %s holds %s of window %s", w.Window, f.Key, f.Window)
			}
			keys = append(keys, f.Key)
		}
		if !slices.Equal(keys, want[w.Window]) {
			t.Errorf("window %s: %d files %v; want %d %v", w.Window, len(keys), keys, len(want[w.Window]), want[w.Window])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d windows emitted; want %d", len(seen), len(want))
	}
}

// counters sums the pipeline's s3once counters by name.
func counters(pr beam.PipelineResult) map[string]int64 {
	m := map[string]int64{}
	if pr == nil {
		return m
	}
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		if c.Namespace() == "s3once" {
			m[c.Name()] += c.Result()
		}
	}
	return m
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
