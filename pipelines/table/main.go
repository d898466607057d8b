package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/program"
	"github.com/s3once/s3once/sink"
)

type Event struct {
	ID   int64
	Name string
}

func main() {
	runID := flag.String("run-id", "", "this run's stable id, e.g. the date it loads (required)")
	endpoint := flag.String("s3-endpoint", "", "S3-compatible endpoint URL; empty for AWS") // not --endpoint: Beam's
	flag.Parse()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	events := beam.Create(s, Event{1, "launch"}, Event{2, "landing"})
	_, err := icebergtable.TryWrite(s, events, icebergtable.Config{Table: "lake.events", RunID: *runID,
		CatalogName: "local", CatalogProperties: map[string]string{"type": "sql", "uri": "file:catalog.db",
			"sql.driver": "sqlite", "sql.dialect": "sqlite", "warehouse": "s3://demo/lake"},
		Sink: sink.Config{Connection: sink.Connection{Endpoint: *endpoint, PathStyle: *endpoint != ""}}})
	if err != nil {
		program.Exit(err) // nothing was written
	}
	out, err := program.Run(context.Background(), p)
	if err != nil {
		program.Exit(err) // the runner's report, then the failure, last
	}
	fmt.Println(out) // committed 1 files; appended 1 files to the table in 1 snapshot
}
