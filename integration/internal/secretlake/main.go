// Command secretlake writes a few records with sink.Write (or
// sink.WriteWindows) into an Iceberg table's run folder and appends them
// with icebergtable.Append, on a SQL catalog over SQLite, with every
// credential given by reference: the sink's S3 keys through
// sink.Credentials (environment variables), the catalog's S3 secret key
// and a token through CatalogSecretsEnv (the SQL catalog ignores the
// token; it travels as a REST catalog's would). No session token reaches
// S3: the test server refuses one (InvalidToken). It writes the
// pipeline it submits, as Beam's universal runner marshals it, to
// --dump-pipeline, so that a test can look for secrets in what the runner
// receives.
//
// TestSecretsNowhere runs it on the embedded runner and on a job server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	icebergio "github.com/apache/iceberg-go/io"
	"google.golang.org/protobuf/proto"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/program"
	"github.com/s3once/s3once/sink"
)

// The environment variables the credentials are read from, on the
// launcher and on every worker.
const (
	AccessKeyEnv    = "SECRETLAKE_ACCESS_KEY_ID"
	SecretKeyEnv    = "SECRETLAKE_SECRET_ACCESS_KEY"
	CatalogTokenEnv = "SECRETLAKE_CATALOG_TOKEN"
)

// Event is a record of the table.
type Event struct {
	ID   int64
	Name string
}

func init() { beam.RegisterType(reflect.TypeFor[Event]()) }

func main() {
	bucket := flag.String("bucket", "", "the table's bucket (required)")
	endpoint := flag.String("s3-endpoint", "", "the S3 endpoint URL (required)")
	catalogDB := flag.String("catalog", "", "the SQLite catalog's file (required)")
	runID := flag.String("run-id", "run-1", "the run's id")
	accessKey := flag.String("access-key-id", "", "the catalog's S3 access key ID (not a secret)")
	windows := flag.Bool("windows", false, "write with sink.WriteWindows instead of sink.Write")
	dump := flag.String("dump-pipeline", "", "write the marshalled pipeline here (required)")
	flag.Parse()
	beam.Init()
	if *bucket == "" || *endpoint == "" || *catalogDB == "" || *dump == "" {
		program.Exit(fmt.Errorf("secretlake: --bucket, --s3-endpoint, --catalog and --dump-pipeline are required"))
	}
	ctx := context.Background()
	conn := sink.Connection{Endpoint: *endpoint, PathStyle: true, Region: "us-east-1",
		Credentials: sink.Credentials{AccessKeyIDEnv: AccessKeyEnv, SecretAccessKeyEnv: SecretKeyEnv}}
	cfg := icebergtable.Config{
		CatalogName: "secretlake", Table: "lake.events", RunID: *runID, Record: reflect.TypeFor[Event](),
		CatalogProperties: map[string]string{"type": "sql", "uri": "file:" + *catalogDB, "sql.driver": "sqlite", "sql.dialect": "sqlite",
			"warehouse": "s3://" + *bucket + "/lake", icebergio.S3AccessKeyID: *accessKey},
		CatalogSecretsEnv: map[string]string{icebergio.S3SecretAccessKey: SecretKeyEnv, "token": CatalogTokenEnv},
		Sink:              sink.Config{Connection: conn},
	}
	s3ctx, err := icebergtable.WithS3(ctx, cfg.Sink)
	if err != nil {
		program.Exit(err)
	}
	cat, err := cfg.LoadCatalog(s3ctx)
	if err != nil {
		program.Exit(err)
	}
	tbl, err := icebergtable.Open(s3ctx, cat, cfg.Identifier(), cfg.Record, "")
	if err != nil {
		program.Exit(err)
	}
	runBucket, runPrefix, err := tbl.RunFolder(*runID)
	if err != nil {
		program.Exit(err)
	}

	p, s := beam.NewPipelineWithRoot()
	events := beam.Create(s, Event{1, "launch"}, Event{2, "landing"}, Event{3, "return"})
	sc := sink.Config{Bucket: runBucket, Prefix: runPrefix, Files: sink.Files{Format: "parquet"}, Connection: conn}
	if *windows {
		_, done := sink.WriteWindows(s, events, sc)
		icebergtable.Append(s, done, cfg)
	} else {
		icebergtable.Append(s, sink.Write(s, events, sc), cfg)
	}
	if err := dumpPipeline(ctx, p, *dump); err != nil {
		program.Exit(err)
	}
	out, err := program.Run(ctx, p)
	if err != nil {
		program.Exit(err)
	}
	fmt.Println(out)
}

// dumpPipeline writes p as the universal runner marshals it for the job
// service (the embedded runner's included), with the environment the
// flags ask for.
func dumpPipeline(ctx context.Context, p *beam.Pipeline, path string) error {
	edges, _, err := p.Build()
	if err != nil {
		return err
	}
	env, err := graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), jobopts.GetEnvironmentConfig)
	if err != nil {
		return err
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		return err
	}
	b, err := proto.Marshal(pb)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
