package integration

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// errorLines returns the lines of a program's log at level ERROR.
func errorLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// TestGoodRunsLogNoError: a good run prints no ERROR line, with nothing
// filtering the runner's logs: a user's own program (pipelines/minimal,
// which installs no log handler of its own), and the examples with
// --verbose (which turns their filter off). Both runs of each, the first
// writing the files and the rerun keeping them, are exact.
func TestGoodRunsLogNoError(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)

	t.Run("own program", func(t *testing.T) {
		bin := binary(t, "pipelines/minimal")
		bucket := srv.Bucket(t)
		const lines = 20000
		args := []string{"--bucket", bucket, "--prefix", "own", "--s3_endpoint", srv.Endpoint(), "--lines", fmt.Sprint(lines)}
		var want map[string][]byte
		for run := 1; run <= 2; run++ {
			o := startChild(t, bin, env, nil, args...).wait(4 * time.Minute)
			if o.Code != 0 {
				t.Fatalf("run %d: %v\n%s", run, o, o.Stderr)
			}
			if e := errorLines(o.Stderr + o.Stdout); len(e) > 0 {
				t.Fatalf("run %d logged %d ERROR lines on a good run:\n%s", run, len(e), strings.Join(e, "\n"))
			}
			got := s3test.Objects(t, client, bucket, "own/")
			if run == 1 {
				want = got
				var all []string
				for k, b := range got {
					zr, err := gzip.NewReader(bytes.NewReader(b))
					if err != nil {
						t.Fatalf("%s: %v", k, err)
					}
					plain, err := io.ReadAll(zr)
					if err != nil {
						t.Fatalf("%s: %v", k, err)
					}
					all = append(all, strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n")...)
				}
				slices.Sort(all)
				if len(all) != lines {
					t.Fatalf("the files hold %d lines, want %d", len(all), lines)
				}
				for i, l := range all {
					if want := fmt.Sprintf("line %06d", i); l != want {
						t.Fatalf("line %d of the sorted output is %q, want %q: each line once", i, l, want)
					}
				}
				continue
			}
			sameObjects(t, got, want)
		}
		sweepAndCheckClean(t, client, bucket, "own/")
	})

	examples := []struct {
		pkg, prefix string
		args        []string
	}{
		{"pipelines/batch", "corpus/", []string{"--records", "6000", "--topics", "2", "--shards", "2", "--checkpoint-bytes", "65536"}},
		{"pipelines/streaming", "events/", []string{"--records", "4000", "--span", "20m", "--window", "10m", "--checkpoint-bytes", "65536"}},
	}
	for _, ex := range examples {
		t.Run(ex.pkg, func(t *testing.T) {
			bin := binary(t, ex.pkg)
			bucket := srv.Bucket(t)
			args := append([]string{"--bucket", bucket, "--s3-endpoint", srv.Endpoint(), "--timeout", "3m", "--verbose"}, ex.args...)
			var want map[string][]byte
			for run := 1; run <= 2; run++ {
				o := startChild(t, bin, env, nil, args...).wait(4 * time.Minute)
				if o.Code != 0 {
					t.Fatalf("run %d: %v\n%s", run, o, o.Stderr)
				}
				if e := errorLines(o.Stderr + o.Stdout); len(e) > 0 {
					t.Fatalf("run %d logged %d ERROR lines on a good run:\n%s", run, len(e), strings.Join(e, "\n"))
				}
				got := s3test.Objects(t, client, bucket, ex.prefix)
				if len(got) == 0 {
					t.Fatalf("run %d wrote nothing under %s", run, ex.prefix)
				}
				if run == 1 {
					want = got
					continue
				}
				sameObjects(t, got, want)
			}
			sweepAndCheckClean(t, client, bucket, ex.prefix)
		})
	}
}
