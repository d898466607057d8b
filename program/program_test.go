package program

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// exitChild, when set, makes the test binary call Exit after beam.Init, as
// a user's program does.
const exitChild = "S3ONCE_PROGRAM_EXIT_CHILD"

func TestMain(m *testing.M) {
	if msg := os.Getenv(exitChild); msg != "" {
		beam.Init()
		Exit(errors.New(msg))
	}
	os.Exit(ptest.MainRet(m))
}

// escape is a Destination that leaves the prefix: the pipeline fails, before
// writing, on its first record.
func escape(s string) string { return "../x" }

// folder is a good Destination.
func folder(s string) string { return "d" + s[:1] }

func init() {
	register.Function1x1(escape)
	register.Function1x1(folder)
}

// After beam.Init, Exit writes a multi-line error as its lines on standard
// error, not as one log line with escaped breaks, and exits with status 1.
func TestExitAfterBeamInit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), exitChild+"=first line\nsecond line")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	if got := stderr.String(); got != "first line\nsecond line\n" {
		t.Errorf("stderr %q, want the error's two lines alone", got)
	}
}

// A data error inside the runner: the report comes first, the sink's
// message last, alone on its line, and nowhere else.
func TestFailureComesLastAndOnce(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	cfg := sink.Config{Bucket: srv.Bucket(t), Prefix: "out", Connection: sink.Connection{Endpoint: srv.Endpoint(), PathStyle: true,
		Region: s3test.Region, Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}}, Files: sink.Files{Destination: escape}}
	p, s := beam.NewPipelineWithRoot()
	sink.Write(s, beam.Create(s, "a", "b"), cfg)
	_, err := Run(context.Background(), p)
	if err == nil {
		t.Fatal("a Destination of ../x passed")
	}
	text := Format(err)
	lines := strings.Split(text, "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "s3once sink: ") || !strings.Contains(last, "../x") {
		t.Fatalf("the last line is %q, want the sink's message naming ../x:\n%s", last, text)
	}
	if n := strings.Count(text, last); n != 1 {
		t.Errorf("the failure appears %d times, want once:\n%s", n, text)
	}
	if !strings.HasPrefix(text, "the runner's report:\n") || strings.Contains(text, `\n`) {
		t.Errorf("want the runner's report first, with real line breaks:\n%s", text)
	}
	if keys := s3test.Keys(t, srv.Client(s3test.ClientOptions{}), cfg.Bucket, ""); len(keys) > 0 {
		t.Errorf("the failed run wrote %v", keys)
	}
}

// A good run reports its files committed; its rerun reports them kept.
func TestOutcomeSaysKept(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	cfg := sink.Config{Bucket: srv.Bucket(t), Prefix: "out", Connection: sink.Connection{Endpoint: srv.Endpoint(), PathStyle: true,
		Region: s3test.Region, Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}}, Files: sink.Files{Shards: 1,
		Destination: folder}}
	for run, want := range []string{"committed 2 files", "committed 2 files (2 kept from an earlier run)"} {
		p, s := beam.NewPipelineWithRoot()
		sink.Write(s, beam.Create(s, "apple", "avocado", "banana"), cfg)
		out, err := Run(context.Background(), p)
		if err != nil {
			t.Fatalf("run %d: %s", run+1, Format(err))
		}
		if got := out.String(); got != want {
			t.Errorf("run %d says %q, want %q (counters %v)", run+1, got, want, out.Counters)
		}
	}
}

// Format leaves a preflight's report and a one-line error as they are (the
// split of a runner's error is internal/runnererr's, tested there), and a
// preflight's error exits with 3.
func TestFormatLeavesPlainErrors(t *testing.T) {
	if got := Format(errors.New("plain")); got != "plain" {
		t.Errorf("Format = %q", got)
	}
	pf := fmt.Errorf("%w", &sink.PreflightError{Bucket: "b", Problems: []sink.PreflightProblem{{Check: "one", Err: errors.New("x")}, {Check: "two", Err: errors.New("y")}}})
	if got := Format(pf); got != pf.Error() {
		t.Errorf("Format of a preflight error = %q, want it unchanged", got)
	}
	var buf bytes.Buffer
	if code := write(&buf, pf); code != 3 {
		t.Errorf("a preflight error exits with %d, want 3", code)
	}
}

// The line counts from the run-wide barrier's counters, which one element
// reports, not from the commit stage's, which prism may thin (2 of 4 files
// in a rerun once said "committed 2 files (4 kept from an earlier run)");
// without the barrier it says the commit stage's count is a lower bound.
func TestOutcomeCountsFromTheBarrier(t *testing.T) {
	for _, c := range []struct {
		name     string
		counters map[string]int64
		want     string
	}{
		{"first run, commit stage thinned", map[string]int64{counterBarrierFiles: 4, counterCommitted: 3}, "committed 4 files"},
		{"rerun, commit stage thinned", map[string]int64{counterBarrierFiles: 4, counterBarrierKept: 4, counterCommitted: 2, "s3once/commits_already_done": 2},
			"committed 4 files (4 kept from an earlier run)"},
		{"rerun after a partial run", map[string]int64{counterBarrierFiles: 4, counterBarrierKept: 1, counterCommitted: 4}, "committed 4 files (1 kept from an earlier run)"},
		{"no barrier", map[string]int64{counterCommitted: 29}, "committed at least 29 files"},
		{"nothing written", map[string]int64{}, "committed 0 files"},
		{"a table appended", map[string]int64{counterBarrierFiles: 3, counterTableSnapshots: 1, counterTableFiles: 3},
			"committed 3 files; appended 3 files to the table in 1 snapshot"},
		{"a table rerun", map[string]int64{counterBarrierFiles: 3, counterBarrierKept: 3, counterTableFound: 2},
			"committed 3 files (3 kept from an earlier run); the table already held the run (2 snapshots)"},
	} {
		if got := outcome(c.counters, time.Second).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The log level comes from LogLevelEnv: warn when unset, a level Beam
// takes as given, and warn (with a line) for anything Beam would end the
// program on.
func TestLogLevel(t *testing.T) {
	for in, want := range map[string]string{"": "warn", "info": "info", " DEBUG ": "debug", "error": "error", "loud": "warn"} {
		if got := logLevel(in); got != want {
			t.Errorf("logLevel(%q) = %q, want %q", in, got, want)
		}
	}
}
