package icebergtable

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	icebergio "github.com/apache/iceberg-go/io"
)

// writeConfig is Write's Config for the table lake.events in bucket's
// warehouse: the catalog properties name no S3 endpoint, region or
// credentials, which come from the sink's Connection alone.
func writeConfig(t *testing.T, bucket, runID string) Config {
	public, fromEnv := inGraph(catalogProps(t, bucket))
	delete(public, icebergio.S3EndpointURL)
	delete(public, icebergio.S3Region)
	return Config{CatalogName: "s3once-test", CatalogProperties: public, CatalogSecretsEnv: fromEnv,
		Table: "lake.events", RunID: runID, Sink: testSink()}
}

// TestWriteInOneCall: Write opens (creating) the table, writes the records
// into the run's folder and appends them in one snapshot, with the S3
// endpoint given only in Sink.Connection; a rerun of the run id adds
// nothing; a rerun of the run id with other records is refused before it
// commits a file, and the refusal tells the user to give the run a new run
// id.
func TestWriteInOneCall(t *testing.T) {
	bucket := srv.Bucket(t)
	cfg := writeConfig(t, bucket, "day-1")
	run := func(recs []event) error {
		p, s := beam.NewPipelineWithRoot()
		if _, err := TryWrite(s, beam.CreateList(s, recs), cfg); err != nil {
			return err
		}
		return ptest.Run(p)
	}
	if err := run(events(0, 30)); err != nil {
		t.Fatal(err)
	}
	cat, err := cfg.LoadCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Fatalf("after the first run: %d snapshots, want 1", n)
	}
	wantIDs(t, cat, [2]int{0, 30})
	if err := run(events(0, 30)); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("after the rerun: %d snapshots, want still 1", n)
	}
	err = run(events(0, 31))
	if err == nil {
		t.Fatal("a rerun of the run id with other records succeeded")
	}
	if !strings.Contains(err.Error(), "give this run a new run id") {
		t.Errorf("the changed rerun's refusal does not say to give the run a new run id: %v", err)
	}
	if n := len(snapshots(t, cat)); n != 1 {
		t.Errorf("after the refused rerun: %d snapshots, want still 1", n)
	}
	wantIDs(t, cat, [2]int{0, 30})
}

// TestWriteRefusesBadArguments: Write's own checks, while the pipeline is
// built, each with a line that names the fix.
func TestWriteRefusesBadArguments(t *testing.T) {
	bucket := srv.Bucket(t)
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"not parquet", func(c *Config) { c.Sink.Format = "jsonl" }, "takes Parquet"},
		{"another record type", func(c *Config) { c.Record = reflect.TypeFor[string]() }, "the input holds"},
		{"partitioned without a destination", func(c *Config) { c.Partition = []PartitionField{Identity("Name")} }, "Destination"},
		{"no run id", func(c *Config) { c.RunID = "" }, "run id"},
		{"a bucket of its own", func(c *Config) { c.Sink.Bucket, c.Sink.Prefix = bucket, "elsewhere" }, "leave them empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, bucket, "day-1")
			c.edit(&cfg)
			_, s := beam.NewPipelineWithRoot()
			_, err := TryWrite(s, beam.CreateList(s, events(0, 2)), cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("TryWrite: %v, want an error saying %q", err, c.want)
			}
		})
	}
}
