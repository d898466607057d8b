// Command s3once-run is what `make run` runs: it starts a local S3 server
// (versitygw, on 127.0.0.1, keeping its data as plain files under .s3data/),
// runs the batch example on Beam's embedded prism runner, writing real files
// through sink.Write, prints the summary and how to look at the files, and
// stops the server it started, also on Ctrl-C or a failure.
//
// The files are gzip JSON Lines under corpus/, or with -format parquet (make
// run FORMAT=parquet) Parquet files under corpus-parquet/, which the summary
// then reads back: every file's footer must hold the records the sink
// committed, and all of them the documents generated.
//
// Running it again writes the same files, byte for byte: the sink finds them
// committed and keeps them (the summary says how many were committed
// earlier). Change --records or --seed together with --prefix, since a key
// that already holds other bytes is refused, loudly.
//
// With -serve (make server) it runs no pipeline: it starts the same server
// on 127.0.0.1:7070 (-port), makes the bucket, prints what a program of
// one's own needs to reach it, and stops the server on Ctrl-C.
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/examples/harness"
	"github.com/s3once/s3once/internal/localserver"
	"github.com/s3once/s3once/internal/runnererr"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/pipelines/corpus"
	"github.com/s3once/s3once/sink"
)

func main() {
	var o options
	flag.StringVar(&o.data, "data", "", "data folder of the S3 server (default: .s3data at the repository root)")
	flag.StringVar(&o.bucket, "bucket", "demo", "bucket to write to (created if missing)")
	flag.StringVar(&o.prefix, "prefix", "", "key prefix of the files (default: corpus, or corpus-parquet with -format parquet)")
	flag.StringVar(&o.format, "format", "jsonl", "file format: jsonl (gzip JSON Lines), parquet (snappy pages), or iceberg (Parquet files appended to an Iceberg table; needs a binary built with -tags iceberg)")
	flag.IntVar(&o.records, "records", 100_000, "documents to generate")
	flag.Uint64Var(&o.seed, "seed", 1, "corpus seed")
	flag.BoolVar(&o.verbose, "verbose", false, "show the runner's logs")
	serveMode := flag.Bool("serve", false, "only start the S3 server, for a program of your own, until Ctrl-C")
	port := flag.Int("port", ServePort, "with -serve: the loopback port to listen on")
	flag.Parse()
	beam.Init()
	if *serveMode {
		os.Exit(serveMain(serveOptions{data: o.data, bucket: o.bucket, port: *port}))
	}
	os.Exit(run(o, os.Stdout, os.Stderr))
}

// serveMain runs serve until SIGINT or SIGTERM and returns the exit code.
func serveMain(o serveOptions) int {
	if o.data == "" {
		root, err := repoRoot()
		if err != nil {
			fmt.Fprintf(os.Stderr, "s3once server: %v\n", err)
			return 1
		}
		o.data = filepath.Join(root, ".s3data")
	}
	if abs, err := filepath.Abs(o.data); err == nil {
		o.data = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "s3once server: %v\n", err)
		return 1
	}
	return 0
}

type options struct {
	data, bucket, prefix string
	format               string // "jsonl" (also when empty) or "parquet"
	records              int
	seed                 uint64
	verbose              bool
}

// tableStage appends a run's files to a table (-format iceberg, in a
// binary built with -tags iceberg).
type tableStage interface {
	// prefix is the run's folder, the sink's Prefix.
	prefix() (string, error)
	// commit appends the run's files and prints the snapshot and row
	// counts.
	commit(ctx context.Context, w io.Writer, rs []sink.FileResult) error
}

func run(o options, out, errOut io.Writer) int {
	harness.QuietLogs(o.verbose)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(errOut, "\ns3once run: "+format+"\n", args...)
		return 1
	}
	root, err := repoRoot()
	if err != nil {
		return fail("%v", err)
	}
	if o.data == "" {
		o.data = filepath.Join(root, ".s3data")
	}
	parquet, iceberg := false, false
	switch o.format {
	case "", "jsonl":
	case "parquet":
		parquet = true
	case "iceberg":
		parquet, iceberg = true, true
	default:
		return fail("-format %q: jsonl, parquet or iceberg", o.format)
	}
	if o.prefix == "" {
		o.prefix = "corpus"
		if parquet {
			o.prefix = "corpus-parquet"
		}
	}

	// The server is stopped by its PID on every way out: a return, Ctrl-C
	// (the context ends, the pipeline stops, the deferred Stop runs), and a
	// second Ctrl-C or a pipeline that does not stop in time (stopAndExit).
	// If this process is killed outright, the kernel kills the server too
	// (localserver sets the parent-death signal).
	srv, err := localserver.Launch(localserver.Options{Root: o.data})
	if err != nil {
		return fail("start the S3 server: %v", err)
	}
	defer srv.Stop()
	rel := relPath(root, o.data)
	fmt.Fprintf(out, "S3 server (versitygw, pid %d) listening on %s, data in %s/\n", srv.PID(), srv.Endpoint(), rel)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// returned is closed when run returns, before stop ends ctx (deferred
	// calls run last first), so the watchdog acts on a signal only.
	returned := make(chan struct{})
	defer close(returned)
	go watchdog(ctx, returned, stopGrace, func() {
		fmt.Fprintln(errOut, "\ns3once run: stopping now")
		srv.Stop()
		os.Exit(130)
	})

	// The pipeline's Config names the server's credentials by these
	// variables; the embedded runner's workers read them here.
	if err := localserver.Export(); err != nil {
		return fail("%v", err)
	}
	client := srv.Client(localserver.ClientOptions{MaxAttempts: 3})
	if err := ensureBucket(ctx, client, o.bucket); err != nil {
		return fail("%v", err)
	}
	var table tableStage
	if iceberg {
		if table, err = openIceberg(ctx, srv.Endpoint(), o.data, o.bucket, o); err != nil {
			return fail("%v", err)
		}
		if o.prefix, err = table.prefix(); err != nil {
			return fail("%v", err)
		}
	}
	cfg := sink.Config{
		Bucket: o.bucket, Prefix: o.prefix,
		Connection: sink.Connection{Endpoint: srv.Endpoint(), Region: localserver.Region, PathStyle: true,
			Credentials: sink.Credentials{AccessKeyIDEnv: localserver.AccessKeyEnv, SecretAccessKeyEnv: localserver.SecretKeyEnv}}, Files: sink.Files{Format: "jsonl", Compression: "gzip", Shards: 2}, Tuning: sink.Tuning{CheckpointBytes: 2 << 20},
	}
	what := "gzip JSON Lines"
	if parquet {
		// Row groups of 4 MiB of records, so that the files show several,
		// each crossing checkpoints (every 2 MiB).
		cfg.Format, cfg.Compression = "parquet", ""
		cfg.Parquet = sink.ParquetOptions{RowGroupBytes: 4 << 20}
		what = "Parquet"
	}
	fmt.Fprintf(out, "preflight of s3://%s/%s/ ... ", o.bucket, o.prefix)
	if err := sink.Preflight(ctx, cfg); err != nil {
		fmt.Fprintln(out)
		return fail("%v", err)
	}
	fmt.Fprintln(out, "ok (bucket, permissions, conditional writes)")

	p, s := beam.NewPipelineWithRoot()
	results, err := corpus.Write(s, corpus.Options{Records: o.records, Seed: o.seed}, cfg)
	if err != nil {
		return fail("build the pipeline: %v", err)
	}
	runID := harness.Collect(s, results)
	fmt.Fprintf(out, "writing %s generated documents as %s with sink.Write on the embedded prism runner\n", harness.Thousands(int64(o.records)), what)
	prog := startProgress(ctx, out, client, o.bucket, o.prefix)
	res, err := harness.Run(ctx, p, runID)
	prog.stop()
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return fail("interrupted after %v; the files committed so far stay, and running again completes the rest", res.Elapsed.Round(time.Millisecond))
		}
		// The runner hands back the error's text only: its code token says
		// what happened.
		if errcode.Has(err, errcode.KeyTaken) || errcode.Has(err, errcode.PartitionChanged) {
			return fail("%s\n\n%s/ holds files of an earlier run with other input, settings or code; remove it (make clean) or pass -prefix", runnererr.Cause(err), rel)
		}
		return fail("the runner's report:\n%v\n\npipeline failed after %v: %s", runnererr.Report(err), res.Elapsed.Round(time.Millisecond), runnererr.Cause(err))
	}
	fmt.Fprintln(out)
	sum := harness.Summary{Name: "batch", Bucket: o.bucket, Prefix: o.prefix, Outcome: res}
	if err := sum.Write(out); err != nil {
		return fail("%v", err)
	}
	if err := checkFolder(ctx, out, client, o.bucket, o.prefix, res.Results); err != nil {
		return fail("%v", err)
	}
	if parquet {
		if err := checkParquet(ctx, out, client, o.bucket, res.Results, int64(o.records)); err != nil {
			return fail("%v", err)
		}
		showParquetFiles(out, rel, o.bucket, res.Results)
		if table != nil {
			if err := table.commit(ctx, out, res.Results); err != nil {
				return fail("%v", err)
			}
		}
	} else {
		showFiles(out, rel, o.bucket, res.Results)
	}
	fmt.Fprintf(out, "\nstopping the S3 server (pid %d); the files stay in %s/ (make clean removes them)\n", srv.PID(), rel)
	return 0
}

// showFiles tells how to look at the files and shows the first record of one.
func showFiles(w io.Writer, data, bucket string, rs []sink.FileResult) {
	if len(rs) == 0 {
		return
	}
	first := filepath.Join(data, bucket, filepath.FromSlash(rs[0].Key))
	fmt.Fprintf(w, "\nThe files are plain files under the server's data folder (folder = bucket, path = key):\n\n")
	fmt.Fprintf(w, "  find %s -name '*.gz' | sort | head\n", filepath.Join(data, bucket, strings.SplitN(rs[0].Key, "/", 2)[0]))
	fmt.Fprintf(w, "  zcat '%s' | head -n 2\n", first)
	if line, err := firstLine(first); err == nil {
		if len(line) > 160 {
			line = line[:160] + "..."
		}
		fmt.Fprintf(w, "\nits first record:\n\n  %s\n", line)
	}
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	if sc.Scan() {
		return sc.Text(), nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func ensureBucket(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return nil
	}
	switch s3call.APICode(err) {
	case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
		return nil
	}
	return fmt.Errorf("create bucket %s: %w", bucket, err)
}

// stopGrace is how long an interrupted run may take to stop by itself.
const stopGrace = 15 * time.Second

// watchdog waits for ctx to end (a first SIGINT or SIGTERM), then for run to
// return (closing returned) within grace; if it does not, or on a second
// signal, it calls kill. A run that returns, interrupted or not, ends the
// watchdog without a call.
func watchdog(ctx context.Context, returned <-chan struct{}, grace time.Duration, kill func()) {
	select {
	case <-ctx.Done():
	case <-returned:
		return
	}
	second := make(chan os.Signal, 1)
	signal.Notify(second, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(second)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-returned:
		return
	case <-t.C:
	case <-second:
	}
	select {
	case <-returned: // a run that returned meanwhile is never killed
		return
	default:
	}
	kill()
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return dir, nil
		}
	}
}

func relPath(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
