// Package icebergtable appends the files sink.Write commits to an Apache
// Iceberg table, exactly once per run.
//
// Write is the one call (Write(s, records, cfg), as sink.Write is called):
// it opens or creates the table, writes the records with the sink into
// the run's folder and appends them. Append is the table stage alone,
// after a program's own sink.WriteWindows. Either way it is a stage of its
// own after the sink, never a sink setting, and programs that do not
// import this package do not link Iceberg. A run writes Parquet
// files with the sink into a folder of its own under the table's location
// (Table.RunFolder: <table location>/data/<run id>), then Commit appends
// them to the table as one snapshot whose summary holds the run id: a
// retry, a rerun or a second writer with the same run id adds nothing, and
// a run id already holding other files is refused. The table is made from
// the record type (SchemaOf) if missing; a table of another schema is
// refused.
//
// A table may be partitioned by identity, day and hour transforms of the
// record's columns (PartitionField): the sink's Destination returns each
// record's PartitionPath, so that each file holds one partition, and
// Commit parses each file's destination into its partition value and
// refuses a file whose column bounds reach outside it. Each data file
// carries Iceberg's column metrics (sizes, value and null counts, bounds
// under the table's metrics modes) and split offsets, taken from the
// footer the sink's writer wrote (sink.FileResult.Footer), never by
// reading the file back.
//
// Maintenance runs beside the writers: Compact rewrites each partition's
// small files into files of a target size as one snapshot, exactly once
// per compaction id, under <table location>/compacted/<id>/;
// ExpireSnapshots drops old
// snapshots from the metadata (writing the commit markers a late retry
// needs) and deletes nothing; RemoveOrphans deletes the files no kept
// snapshot references once they are older than a safety age, keeping
// s3once's markers and the files of run folders not abandoned. It lists
// and deletes through the table's file IO itself rather than calling
// iceberg-go's Table.DeleteOrphanFiles, which would delete the markers.
//
// Catalogs are iceberg-go's: the SQL catalog over SQLite (this package
// imports the pure-Go driver modernc.org/sqlite, driver name "sqlite") for
// one machine, REST or Glue for clusters. docs/engines.md, "Writing to an
// Iceberg table", has a complete program and the timestamp decision.
package icebergtable

import (
	// The catalogs a Config's "type" may name (each registers itself when
	// imported: "sql", "rest", "glue"), the SQL catalog's pure-Go SQLite
	// driver, and the S3 file IO.
	_ "github.com/apache/iceberg-go/catalog/glue"
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	_ "modernc.org/sqlite"
)
