// Command streaming is s3once's streaming example: user events with event
// timestamps, in fixed windows, written to S3 with sink.Write as gzip JSON
// Lines, one folder per event kind and one set of files per window, exactly
// once. It prints a table of the committed files.
//
// By default it generates a seeded, bounded set of events spread over an
// hour of event time (10-minute windows): every run writes the same files.
// With --live=30s it makes events as time passes instead, from an unbounded
// source, and files are committed as their windows close:
//
//	go run ./pipelines/streaming --bucket demo --s3-endpoint http://127.0.0.1:7070 --live 30s --window 10s
//
// The runner flags are Beam's, as for the batch example (--runner,
// --endpoint for a Flink or Spark job server, Dataflow's flags).
//
// Exit status: 0 done, 1 the pipeline failed, 2 bad flags or configuration,
// 3 the preflight found problems (nothing was written).
package main

import (
	"flag"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/internal/examples/harness"
	"github.com/s3once/s3once/pipelines/events"
	"github.com/s3once/s3once/sink"
)

func main() {
	var (
		sf     harness.SinkFlags
		common harness.Common
		o      events.Options
		seed   uint64
	)
	usage := harness.NewUsage(flag.CommandLine, "streaming")
	sf.Register(flag.CommandLine, "events", "gzip")
	common.Register(flag.CommandLine)
	flag.IntVar(&o.Records, "records", 100_000, "number of events to generate")
	flag.Uint64Var(&seed, "seed", 1, "event seed: equal seeds give equal events")
	flag.DurationVar(&o.Span, "span", 0, "event time the generated events cover (0: 1h)")
	flag.DurationVar(&o.Window, "window", 0, "fixed window size (0: 10m, or 10s with --live)")
	flag.DurationVar(&o.Live, "live", 0, "make events as time passes, for this long, from an unbounded source")
	flag.DurationVar(&o.Tick, "tick", 0, "with --live: how often a burst of events is made (0: 1s)")
	flag.IntVar(&o.PerTick, "per-tick", 0, "with --live: events per burst (0: 500)")
	usage.Parse(os.Args[1:])
	beam.Init()
	o.Seed = seed

	if _, err := o.Check(); err != nil {
		os.Stderr.WriteString("s3once streaming: " + err.Error() + "\n")
		os.Exit(harness.ExitUsage)
	}
	prog := harness.Program{
		Name: "streaming", Sink: &sf, Common: &common,
		Config: events.Configure, // before the preflight, which checks these settings
		Build: func(s beam.Scope, cfg sink.Config) (beam.PCollection, error) {
			return events.Write(s, o, cfg)
		},
	}
	os.Exit(prog.Main())
}
