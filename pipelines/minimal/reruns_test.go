package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/runfolder"
	"github.com/s3once/s3once/internal/testkit/childprog"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// childArgs, when set, makes the test binary run the program's main with
// these arguments (one a line), as `go run .` in the README does.
const childArgs = "S3ONCE_MINIMAL_CHILD_ARGS"

// rerunsEnv sets how many times TestRerunsAgreeWithTheFolder runs the
// program again over its first run's files: defaultReruns, the 20
// out of 20, unless set. The 21 runs took 11 s, and 43 s under -race, on 2
// cores at a load average of 6.
const (
	rerunsEnv     = "S3ONCE_README_RERUNS"
	defaultReruns = 20
)

// maxGoodRunLines bounds what a good run of the README's program prints,
// on both outputs.
const maxGoodRunLines = 3

func TestMain(m *testing.M) { childprog.Main(m, childArgs, main) }

// TestRerunsAgreeWithTheFolder runs the README's program, then its rerun
// over and over, on prism against a test server, and holds the line it
// prints each time to the folder it left: "committed N files" where N is
// the number of files the folder holds and its partition manifests list,
// and on every rerun "(N kept from an earlier run)". The line used to
// count the commit stage's files, which prism thins ("committed 2 files
// (4 kept from an earlier run)" for a folder of 4 files).
func TestRerunsAgreeWithTheFolder(t *testing.T) {
	reruns := defaultReruns
	if v := os.Getenv(rerunsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count of at least 1", rerunsEnv, v)
		}
		reruns = n
	}
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	args := []string{"--bucket", bucket, "--s3-endpoint", srv.Endpoint()}
	began := time.Now()
	for run := 0; run <= reruns; run++ {
		stdout, stderr := childprog.Output(t, childArgs, "", args...)
		// A good run prints its result line, and nothing from the runner
		// (program.LogLevelEnv is unset here).
		if n := strings.Count(stdout+stderr, "\n"); n > maxGoodRunLines {
			t.Errorf("run %d printed %d lines, want at most %d:\n%s%s", run+1, n, maxGoodRunLines, stdout, stderr)
		}
		line := strings.TrimSpace(stdout)
		ctx := context.Background()
		files, err := runfolder.Files(ctx, client, bucket, *prefix)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := runfolder.Manifests(ctx, client, bucket, *prefix, []runfolder.Partition{{Window: "global"}})
		if err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
		if len(files) == 0 || len(listed) != len(files) {
			t.Fatalf("run %d: the folder holds %d files, its manifest lists %d", run+1, len(files), len(listed))
		}
		for i, f := range files {
			if listed[i].Key != f.Key || listed[i].Size != f.Size {
				t.Fatalf("run %d: the folder holds %s (%d bytes), the manifest lists %s (%d bytes)", run+1, f.Key, f.Size, listed[i].Key, listed[i].Size)
			}
		}
		want := fmt.Sprintf("committed %d files", len(files))
		if run > 0 {
			want += fmt.Sprintf(" (%d kept from an earlier run)", len(files))
		}
		if line != want {
			t.Errorf("run %d of %d printed %q; the folder holds %d files, so want %q", run+1, reruns+1, line, len(files), want)
		}
	}
	t.Logf("%d runs in %v", reruns+1, time.Since(began).Round(time.Millisecond))
}
