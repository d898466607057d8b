// Command batch is s3once's batch example: it generates a seeded text corpus
// (documents on a few topics) and writes it to S3 with sink.Write, as gzip
// JSON Lines (or, with --format parquet, as Parquet files), one folder per
// topic, exactly once. It prints a table of the committed files.
//
// Against a local S3-compatible server, on the embedded runner:
//
//	AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//	  go run ./pipelines/batch --bucket demo --s3-endpoint http://127.0.0.1:7070
//
// Against AWS (credentials from the standard chain):
//
//	go run ./pipelines/batch --bucket my-bucket --prefix corpus --s3-region eu-west-1
//
// On a Flink or Spark job server, or on Dataflow, add Beam's flags:
// --runner=universal --endpoint=localhost:8099 --environment_type=DOCKER, or
// --runner=dataflow --project=... --region=... --staging_location=gs://...
//
// Running the same command twice writes the same files, byte for byte; a
// run that was killed and started again completes the output without
// duplicating or losing a record.
//
// Exit status: 0 done, 1 the pipeline failed, 2 bad flags or configuration,
// 3 the preflight found problems (nothing was written).
package main

import (
	"flag"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/internal/examples/harness"
	"github.com/s3once/s3once/pipelines/corpus"
	"github.com/s3once/s3once/sink"
)

func main() {
	var (
		sf     harness.SinkFlags
		common harness.Common
		o      corpus.Options
		seed   uint64
		format string
		pq     sink.ParquetOptions
	)
	usage := harness.NewUsage(flag.CommandLine, "batch")
	sf.Register(flag.CommandLine, "corpus", "gzip")
	common.Register(flag.CommandLine)
	flag.IntVar(&o.Records, "records", 50_000, "number of documents to generate")
	flag.Uint64Var(&seed, "seed", 1, "corpus seed: equal seeds give equal documents")
	flag.IntVar(&o.Topics, "topics", 4, "topics (destinations) the documents spread over")
	flag.IntVar(&o.MinWords, "min-words", 20, "fewest words in a document")
	flag.IntVar(&o.MaxWords, "max-words", 120, "most words in a document")
	flag.StringVar(&format, "format", "jsonl", "file format: jsonl, or parquet (one column per field of the document; --compression then does not apply)")
	flag.StringVar(&pq.Compression, "parquet-compression", "", "with --format parquet: page compression, snappy, zstd, gzip or none (empty: snappy)")
	flag.Int64Var(&pq.RowGroupBytes, "row-group-bytes", 0, "with --format parquet: end a row group at this many record bytes (0: 64 MiB)")
	usage.Parse(os.Args[1:])
	beam.Init()
	compressionSet := false
	flag.Visit(func(f *flag.Flag) { compressionSet = compressionSet || f.Name == "compression" })
	o.Seed = seed

	if _, err := o.Check(); err != nil {
		os.Stderr.WriteString("s3once batch: " + err.Error() + "\n")
		os.Exit(harness.ExitUsage)
	}
	prog := harness.Program{
		Name: "batch", Sink: &sf, Common: &common,
		// The settings go on the Config before the preflight runs, so that
		// it checks the folder against the settings the files get.
		Config: func(cfg *sink.Config) {
			cfg.Format = format
			if format == "parquet" {
				cfg.Parquet = pq
				if !compressionSet {
					cfg.Compression = "" // the example's gzip default is for JSON Lines
				}
			}
			corpus.Configure(cfg)
		},
		Build: func(s beam.Scope, cfg sink.Config) (beam.PCollection, error) {
			return corpus.Write(s, o, cfg)
		},
	}
	os.Exit(prog.Main())
}
