package icebergtable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/iceberg-go/io"

	"github.com/s3once/s3once/sink"
)

// Write writes records into the table cfg names, exactly once per run id:
// the one call that does what Open, Table.RunFolder, sink.WriteWindows and
// Append do in turn. It returns a PCollection of the Result of each
// window's commit. Bad arguments panic, as Beam's transforms do; TryWrite
// returns them as an error.
func Write(s beam.Scope, records beam.PCollection, cfg Config) beam.PCollection {
	out, err := TryWrite(s, records, cfg)
	if err != nil {
		panic(err)
	}
	return out
}

// TryWrite is Write, returning an error for bad arguments and for a table
// it cannot open or create.
//
// While the pipeline is built it loads the catalog and opens the table,
// creating it from the record type when it is missing (so the program
// that builds the pipeline needs the catalog and the table's bucket), and
// sets the sink's Bucket and Prefix to the run's folder
// (Table.RunFolder); cfg.Sink leaves them empty. The sink writes Parquet
// (cfg.Sink.Files.Format may be empty or "parquet"). Record defaults to
// the element type of records. A partitioned table needs cfg.Sink's
// Destination to return each record's PartitionPath.
//
// The S3 endpoint, region, path style and credentials are given once, in
// cfg.Sink.Connection: the sink's writes and the table's metadata writes
// both use them (see LoadCatalog).
func TryWrite(s beam.Scope, records beam.PCollection, cfg Config) (beam.PCollection, error) {
	none := beam.PCollection{}
	if !records.IsValid() {
		return none, errors.New("s3once iceberg: Write: invalid input PCollection")
	}
	// The Beam --endpoint trap is refused before the catalog is reached.
	if err := sink.CheckBeamEndpoint(cfg.Sink.Endpoint); err != nil {
		return none, err
	}
	elemT := records.Type().Type()
	if cfg.Record == nil {
		cfg.Record = elemT
	} else if cfg.Record != elemT {
		return none, fmt.Errorf("s3once iceberg: Write: Record is %v but the input holds %v", cfg.Record, elemT)
	}
	if err := cfg.check(); err != nil {
		return none, err
	}
	sc := cfg.Sink
	switch sc.Format {
	case "":
		sc.Format = "parquet"
	case "parquet":
	default:
		return none, fmt.Errorf("s3once iceberg: Write: the table takes Parquet files; leave Sink.Files.Format empty (it is %q)", sc.Format)
	}
	if len(cfg.Partition) > 0 && sc.Destination == nil {
		return none, fmt.Errorf("s3once iceberg: Write: the table is partitioned (%d fields): set Sink.Files.Destination to a registered func(%v) (string, error) returning icebergtable.PartitionPath(partition, record), so that each file holds one partition", len(cfg.Partition), elemT)
	}
	ctx, err := WithS3(context.Background(), cfg.Sink)
	if err != nil {
		return none, err
	}
	cat, err := cfg.LoadCatalog(ctx)
	if err != nil {
		return none, err
	}
	tbl, err := Open(ctx, cat, cfg.Identifier(), cfg.Record, "", cfg.Partition...)
	if err != nil {
		return none, err
	}
	bucket, prefix, err := tbl.RunFolder(cfg.RunID)
	if err != nil {
		return none, err
	}
	if (sc.Bucket != "" && sc.Bucket != bucket) || (sc.Prefix != "" && sc.Prefix != prefix) {
		return none, fmt.Errorf("s3once iceberg: Write: Sink's Bucket and Prefix (%q, %q) are not the run's folder s3://%s/%s: leave them empty, Write sets them", sc.Bucket, sc.Prefix, bucket, prefix)
	}
	sc.Bucket, sc.Prefix = bucket, prefix
	s = s.Scope("icebergtable.Write")
	_, windows, err := sink.TryWriteWindows(s, records, sc)
	if err != nil {
		return none, err
	}
	return tryAppend(s, windows, cfg)
}

// s3Properties is props with the S3 connection of the sink's settings
// added for the table's file IO where props do not set them: the endpoint
// ("s3.endpoint"), path-style addressing ("s3.force-virtual-addressing")
// and the region ("s3.region"). The credentials reach the file IO through
// WithS3's AWS configuration.
func s3Properties(props map[string]string, c sink.Connection) map[string]string {
	out := maps.Clone(props)
	if out == nil {
		out = map[string]string{}
	}
	if _, ok := out[io.S3EndpointURL]; !ok && c.Endpoint != "" {
		out[io.S3EndpointURL] = c.Endpoint
		if _, ok := out[io.S3ForceVirtualAddressing]; !ok {
			out[io.S3ForceVirtualAddressing] = strconv.FormatBool(!c.PathStyle)
		}
	}
	if _, ok := out[io.S3Region]; !ok && c.Region != "" {
		out[io.S3Region] = c.Region
	}
	return out
}

// The table stage's counters, each reported by the one element that
// commits a window, so no runner thins them: program.Run reads them.
var (
	snapshotsAdded = beam.NewCounter("s3once", "table_snapshots_added")
	snapshotsFound = beam.NewCounter("s3once", "table_snapshots_found")
	filesAppended  = beam.NewCounter("s3once", "table_files_appended")
)

// count reports a window's commit to the counters.
func count(ctx context.Context, res Result) {
	switch {
	case res.Added:
		snapshotsAdded.Inc(ctx, 1)
		filesAppended.Inc(ctx, int64(res.Files))
	case res.SnapshotID != 0:
		snapshotsFound.Inc(ctx, 1)
	}
}
