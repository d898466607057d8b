// Package program is what the main function of a program that writes
// through s3once needs beside the transform: running the pipeline and
// learning what it committed (Run), and ending the program on a failure in
// a way a person reads (Exit).
//
//	func main() {
//		flag.Parse()
//		beam.Init()
//		...
//		if err := sink.Preflight(ctx, cfg); err != nil {
//			program.Exit(err) // nothing was written
//		}
//		p, s := beam.NewPipelineWithRoot()
//		sink.Write(s, records, cfg)
//		out, err := program.Run(ctx, p)
//		if err != nil {
//			program.Exit(err)
//		}
//		fmt.Println(out) // committed 12 files (12 kept from an earlier run)
//	}
//
// After beam.Init, the standard log package writes through Beam's logger:
// log.Fatal(err) then prints a multi-line error as one INFO line with its
// line breaks escaped. Exit writes to standard error itself.
package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/s3once/s3once/internal/runnererr"
	"github.com/s3once/s3once/sink"
)

// Outcome is what a finished run reports, as far as the runner reports
// the pipeline's counters (the embedded runner does).
type Outcome struct {
	// Committed counts the files of the run's output: once it has ended,
	// its partitions hold exactly these files, whether this run committed
	// them or kept them from an earlier run. It comes from the run-wide
	// barrier (bounded input, FinalizeCommit not "always"), which checks
	// every file of the run in one element, so no runner thins the count;
	// without the barrier it is the commit stage's count, which a runner
	// may thin, and String says "at least".
	Committed int64
	// Kept counts, of those, the files an earlier run had committed with
	// the same bytes (a rerun keeps them); 0 without the barrier.
	Kept int64
	// Table is what an Iceberg table stage (icebergtable.Write or
	// Append) did, if the pipeline has one: counted by the one element
	// that commits each window, so exact.
	Table TableOutcome
	// Counters are all the pipeline's counters, "namespace/name" ->
	// value.
	Counters map[string]int64
	// Elapsed is the wall time from submission to the end.
	Elapsed time.Duration

	// atLeast says that Committed is the commit stage's count, which may
	// come up short.
	atLeast bool
}

// TableOutcome counts an Iceberg table stage's window commits.
type TableOutcome struct {
	// Snapshots counts the snapshots the run added, Files the data files
	// they appended.
	Snapshots, Files int64
	// Found counts the windows an earlier attempt of the run had already
	// appended (a rerun with the same run id adds nothing).
	Found int64
}

// String says what was committed: "committed 12 files", with the files
// kept from an earlier run when there are any ("committed 12 files (12
// kept from an earlier run)" for a rerun of the same input), or "committed
// at least 12 files" when the count is one a runner may thin. With a
// table stage it goes on: "; appended 12 files to the table in 1
// snapshot", or "; the table already held the run (1 snapshot)".
func (o Outcome) String() string {
	s := fmt.Sprintf("committed %d files", o.Committed)
	if o.atLeast {
		s = fmt.Sprintf("committed at least %d files", o.Committed)
	}
	if o.Kept > 0 {
		s += fmt.Sprintf(" (%d kept from an earlier run)", o.Kept)
	}
	t := o.Table
	if t.Snapshots > 0 {
		s += fmt.Sprintf("; appended %d files to the table in %d %s", t.Files, t.Snapshots, plural(t.Snapshots, "snapshot"))
	}
	if t.Found > 0 {
		s += fmt.Sprintf("; the table already held the run (%d %s)", t.Found, plural(t.Found, "snapshot"))
	}
	return s
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// The sink's counters that Run reads. The barrier's are reported, per
// Write, by the one element that holds every file of the run; the commit
// stage's by every bundle that commits, and a runner may lose some of
// those reports (prism does, docs/operating.md#metrics).
const (
	counterBarrierFiles = "s3once/barrier_files"
	counterBarrierKept  = "s3once/barrier_kept"
	counterCommitted    = "s3once/files_committed"

	counterTableSnapshots = "s3once/table_snapshots_added"
	counterTableFiles     = "s3once/table_files_appended"
	counterTableFound     = "s3once/table_snapshots_found"
)

// outcome fills in Committed and Kept from the counters: the barrier's
// where it ran, else the commit stage's, as a lower bound.
func outcome(counters map[string]int64, elapsed time.Duration) Outcome {
	out := Outcome{Counters: counters, Elapsed: elapsed, Table: TableOutcome{
		Snapshots: counters[counterTableSnapshots], Files: counters[counterTableFiles], Found: counters[counterTableFound]}}
	if files, ok := counters[counterBarrierFiles]; ok {
		out.Committed, out.Kept = files, counters[counterBarrierKept]
		return out
	}
	out.Committed = counters[counterCommitted]
	out.atLeast = out.Committed > 0
	return out
}

// Run runs p on the runner Beam's --runner flag names (the embedded prism
// runner when unset), waits for it to end, and reads the sink's counters:
// how many files the run's output holds, and how many of them an earlier
// run had committed (see Outcome).
// Its error is the runner's: give it to Exit, or to Format.
//
// Before it starts the runner, Run refuses the S3 server's URL given to
// Beam's --endpoint (sink.CheckBeamEndpoint), with the line Preflight and
// Write give: a runner would otherwise wait minutes for a job service
// there, or ignore the flag.
func Run(ctx context.Context, p *beam.Pipeline) (Outcome, error) {
	if err := sink.CheckBeamEndpoint(""); err != nil {
		return Outcome{Counters: map[string]int64{}}, err
	}
	began := time.Now()
	pr, err := beamx.RunWithMetrics(ctx, p)
	if err != nil {
		return Outcome{Elapsed: time.Since(began), Counters: map[string]int64{}}, err
	}
	return outcome(counters(pr), time.Since(began)), nil
}

// counters reads a run's counters. A runner result without metrics (the
// universal runner's, when the job service could not report them) panics in
// Metrics; that is taken as "no counters".
func counters(pr beam.PipelineResult) (m map[string]int64) {
	m = map[string]int64{}
	if pr == nil {
		return m
	}
	defer func() {
		if recover() != nil {
			m = map[string]int64{}
		}
	}()
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		m[c.Namespace()+"/"+c.Name()] += c.Result()
	}
	return m
}

// Exit prints err on standard error, as Format gives it, and ends the
// program: with status 3 when the preflight found problems (nothing was
// written), else 1. Exit(nil) ends it with status 0.
func Exit(err error) {
	if err == nil {
		os.Exit(0)
	}
	os.Exit(write(os.Stderr, err))
}

// write prints err as Format gives it and returns the exit status.
func write(w io.Writer, err error) int {
	fmt.Fprintln(w, Format(err))
	if errors.Is(err, sink.ErrPreflight) {
		return 3
	}
	return 1
}

// Format lays err out for a person; it is the one way s3once prints a
// pipeline's error (Exit prints it so). A runner's error holds the failed
// stage's plan and a chain of causes, the sink's own message somewhere
// inside: Format gives that report first and the message to act on last,
// on a line of its own, and only there. Other errors (the preflight's list
// of problems, an error whose first line says what failed) are given as
// they are.
func Format(err error) string {
	msg := strings.TrimSpace(err.Error())
	cause := runnererr.Cause(err)
	if errors.Is(err, sink.ErrPreflight) || cause == runnererr.FirstLine(msg) {
		return msg
	}
	return "the runner's report:\n  " + strings.ReplaceAll(runnererr.Report(err), "\n", "\n  ") + "\n\n" + cause
}
