package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/internal/runnererr"
	"github.com/s3once/s3once/sink"
)

// Exit codes of the example programs.
const (
	ExitOK        = 0
	ExitFailed    = 1 // the pipeline failed
	ExitUsage     = 2 // bad flags or configuration
	ExitPreflight = 3 // the preflight found problems; nothing was written
)

// Common are the flags every example has besides the sink's.
type Common struct {
	ResultsJSON string
	Timeout     time.Duration
	Verbose     bool
}

// Register adds the common flags to fs.
func (c *Common) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.ResultsJSON, "results-json", "", "also write the committed files to this file, as JSON")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up after this long (0: no limit)")
	fs.BoolVar(&c.Verbose, "verbose", false, "show the runner's logs")
}

// Program is one example program's run: Build adds its pipeline under the
// root scope and returns the sink's FileResults.
type Program struct {
	Name   string
	Sink   *SinkFlags
	Common *Common
	// Build builds the pipeline's transforms, the sink.Write among them.
	Build func(s beam.Scope, cfg sink.Config) (beam.PCollection, error)
	// Config, if set, adjusts the sink configuration the flags describe.
	Config func(*sink.Config)
	// Stdout and Stderr default to the process's.
	Stdout, Stderr io.Writer
}

// Main runs the program after the flags are parsed and beam.Init has run,
// and returns the process exit code. It cancels the run on SIGINT and
// SIGTERM. Errors are printed as one clear message on stderr.
func (p Program) Main() int {
	stdout, stderr := p.Stdout, p.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	QuietLogs(p.Common.Verbose)
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "s3once %s: "+format+"\n", append([]any{p.Name}, args...)...)
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if p.Common.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Common.Timeout)
		defer cancel()
	}

	cfg := p.Sink.Config()
	if p.Config != nil {
		p.Config(&cfg)
	}
	if cfg.Bucket == "" {
		return fail(ExitUsage, "--bucket is required (see -help)")
	}
	if err := cfg.Validate(); err != nil {
		return fail(ExitUsage, "%v", err)
	}
	if err := CheckJobEndpoint(ctx, cfg.Endpoint); err != nil {
		return fail(ExitUsage, "%v", err)
	}
	if !p.Sink.SkipPreflight {
		pctx, cancel := context.WithTimeout(ctx, p.Sink.PreflightTimeout)
		err := sink.Preflight(pctx, cfg)
		cancel()
		if err != nil {
			return fail(ExitPreflight, "%s", withFlagNames(err.Error()))
		}
	}

	pl, s := beam.NewPipelineWithRoot()
	results, err := p.Build(s, cfg)
	if err != nil {
		if errors.Is(err, sink.ErrInvalidConfig) {
			return fail(ExitUsage, "%v", err)
		}
		return fail(ExitUsage, "build the pipeline: %v", err)
	}
	run := Collect(s, results)
	pctx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		reportProgress(pctx, stderr, p.Name, run)
	}()
	out, err := Run(ctx, pl, run)
	stopProgress()
	<-progressDone
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			if errors.Is(cerr, context.Canceled) {
				return fail(ExitFailed, "interrupted after %v; the files committed so far stay, and running again with the same flags completes the rest", out.Elapsed.Round(time.Millisecond))
			}
			err = fmt.Errorf("%w (stopped: %w)", err, cerr)
		}
		// The runner's report (stages, plans, the chain of causes) first;
		// the cause itself last, where it is read, and only there.
		fmt.Fprintf(stderr, "s3once %s: the runner's report:\n%s\n\n", p.Name, indent(runnererr.Report(err)))
		if len(out.Results) > 0 {
			fmt.Fprintf(stderr, "s3once %s: %d files were committed before the failure; a rerun with the same input and flags keeps them and writes the rest\n", p.Name, len(out.Results))
		}
		return fail(ExitFailed, "pipeline failed after %v: %s", out.Elapsed.Round(time.Millisecond), runnererr.Cause(err))
	}
	sum := Summary{Name: p.Name, Bucket: cfg.Bucket, Prefix: cfg.Prefix, Outcome: out}
	if err := sum.Write(stdout); err != nil {
		return fail(ExitFailed, "print the summary: %v", err)
	}
	if p.Common.ResultsJSON != "" {
		if err := WriteResultsJSON(p.Common.ResultsJSON, out.Results); err != nil {
			return fail(ExitFailed, "%v", err)
		}
	}
	return ExitOK
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}

// QuietLogs keeps the runner's informational logs (job states, servers
// starting) off the terminal unless verbose is set, and the reports of
// failed bundles, which the job's error repeats; warnings and errors still
// show, but for one more: the Go SDK's "couldn't find plan in finalizing
// map", logged when a reused plan lost a bundle-finalization callback. The
// sink's commit stage commits those files anyway (that is why it exists), so
// the message says nothing about the output; it is shown with --verbose.
func QuietLogs(verbose bool) {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if verbose {
		slog.SetDefault(slog.New(h))
		return
	}
	slog.SetDefault(slog.New(dropHandler{h}))
}

// dropHandler drops the lost-finalization message (see QuietLogs).
type dropHandler struct{ slog.Handler }

func (d dropHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case strings.Contains(r.Message, "couldn't find plan in finalizing map"):
		return nil
	case strings.HasPrefix(r.Message, "Prism received bundle error"),
		strings.HasPrefix(r.Message, "stage.Execute aborting"),
		strings.HasPrefix(r.Message, "Bundle Failed"),
		strings.HasPrefix(r.Message, "Job Failed"),
		strings.HasPrefix(r.Message, "job failed"),
		strings.Contains(r.Message, "process bundle failed for instruction"):
		// A failed bundle fails the job, and the job's error, printed at
		// the end, holds the same report.
		return nil
	}
	return d.Handler.Handle(ctx, r)
}

func (d dropHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return dropHandler{d.Handler.WithAttrs(as)}
}
func (d dropHandler) WithGroup(n string) slog.Handler { return dropHandler{d.Handler.WithGroup(n)} }
