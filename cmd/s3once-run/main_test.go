package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/errcode"
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

// A second run over the first one's files with another input is refused by
// the run-wide barrier on the prism runner (its partitions are complete, or
// its keys hold other bytes); the error that comes back is text only, and
// its code (errcode.PartitionChanged or errcode.KeyTaken) is what picks the
// advice to clean up.
func TestRunOverOtherFilesIsRecognisedByCode(t *testing.T) {
	data := t.TempDir()
	var out, errOut strings.Builder
	if code := run(options{data: data, bucket: "demo", prefix: "corpus", records: 2000, seed: 1}, &out, &errOut); code != 0 {
		t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code := run(options{data: data, bucket: "demo", prefix: "corpus", records: 2000, seed: 2}, &out, &errOut)
	if code != 1 {
		t.Fatalf("second run with another seed: exit %d, want 1\nstderr:\n%s", code, errOut.String())
	}
	msg := errOut.String()
	if !errcode.Has(errors.New(msg), errcode.PartitionChanged) && !errcode.Has(errors.New(msg), errcode.KeyTaken) {
		t.Errorf("the failure carries neither %s nor %s:\n%s", errcode.PartitionChanged.Token(), errcode.KeyTaken.Token(), msg)
	}
	if !strings.Contains(msg, "holds files of an earlier run with other input, settings or code") {
		t.Errorf("the refusal was not recognised by its code:\n%s", msg)
	}
}

// The watchdog that force-stops an interrupted run acts only on a signal: a
// run that returns by itself ends it at once, before and after an interrupt.
// (It used to take the end of run for an interrupt, and killed the process
// 15 s after any run had returned: the test binary, between two runs.)
func TestWatchdogActsOnInterruptOnly(t *testing.T) {
	for _, c := range []struct {
		name        string
		interrupted bool // the context ends before run returns (else after, as run's deferred calls end it)
		returns     bool
		grace       time.Duration
		kills       int
		why         string
	}{
		{"run returns, then the context ends", false, true, time.Nanosecond, 0, "killed a run that had returned by itself"},
		{"interrupted, and run returns within the grace", true, true, time.Hour, 0, "killed a run that stopped in time"},
		{"interrupted, and run does not return", true, false, time.Millisecond, 1, "did not stop a run that outlived the grace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.interrupted {
				cancel()
			}
			returned := make(chan struct{})
			killed, ended := make(chan struct{}, 1), make(chan struct{})
			go func() {
				defer close(ended)
				watchdog(ctx, returned, c.grace, func() { killed <- struct{}{} })
			}()
			if c.returns {
				close(returned) // as run's deferred calls do: returned first,
			}
			cancel() // then the signal context
			select {
			case <-ended:
			case <-time.After(time.Minute):
				t.Fatal("the watchdog did not end")
			}
			if len(killed) != c.kills {
				t.Fatal("the watchdog " + c.why)
			}
		})
	}
}
