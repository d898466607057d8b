package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// One run end to end: the server starts on the given data folder, the
// example writes its files there, the summary says so, and the server is
// gone afterwards.
func TestRun(t *testing.T) {
	data := t.TempDir()
	var out, errOut strings.Builder
	code := run(options{data: data, bucket: "demo", prefix: "corpus", records: 3000, seed: 1}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	text := out.String()
	for _, want := range []string{"S3 server (versitygw, pid ", "preflight of s3://demo/corpus/ ... ok",
		"files committed to s3://demo/corpus/", "TOTAL (", "3,000", "zcat ", "its first record", "stopping the S3 server"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	files, err := filepath.Glob(filepath.Join(data, "demo", "corpus", "topic=*", "*.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files under the data folder (%v)", err)
	}
	// The server's PID, from the first line, must be gone.
	var pid int
	if _, err := fmt.Sscanf(text, "S3 server (versitygw, pid %d)", &pid); err != nil {
		t.Fatalf("no PID in the output: %v", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the S3 server (pid %d) still runs", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if _, err := os.Stat(filepath.Join(data, "demo")); err != nil {
		t.Errorf("the data folder lost the bucket: %v", err)
	}
}
