package icebergtable

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestDuckDBReadsDataFiles: DuckDB, an engine that shares no code with
// parquet-go or iceberg-go, reads every data file of the snapshot a commit
// made (found through the table's manifests, read from the test server's
// data folder) and finds every record once with every value as written:
// the ID, the name and the optional note (NULL where it was nil) exactly,
// the timestamp to the microsecond.
//
// The microsecond is DuckDB's limit, not the files': DuckDB reads a
// Parquet TIMESTAMP(NANOS) marked as adjusted to UTC, which is how
// timestamptz_ns is stored, as TIMESTAMP WITH TIME ZONE, a type of
// microseconds, and drops the last three digits (only a timestamp not
// adjusted to UTC becomes its TIMESTAMP_NS). The test holds DuckDB to
// that: each timestamp is the one written, cut to the microsecond, and the
// footers DuckDB decodes say the column holds nanoseconds. Should a later
// DuckDB read the column as a nanosecond type, the column type check
// fails, and the timestamps can be held to the nanosecond.
func TestDuckDBReadsDataFiles(t *testing.T) {
	node := readerNode(t, "@duckdb/node-api")
	recs, res, loaded := committedRun(t)
	// The data files as the manifests list them, read where the test
	// server keeps them (versitygw holds s3://bucket/key at
	// <root>/bucket/key, as read.mjs reads it for icebird).
	var files []string
	for _, df := range snapshotDataFiles(t, loaded) {
		files = append(files, localPath(t, df.FilePath()))
	}
	if len(files) != res.Files {
		t.Fatalf("the current snapshot lists %d data files; the commit added %d", len(files), res.Files)
	}

	out := runReader(t, "duckdb", node, append([]string{"duckdb.mjs"}, files...)...)
	head, rows, _ := bytes.Cut(out, []byte("\n"))
	var desc struct {
		Columns map[string]string
		Parquet []struct {
			Name        string
			Type        string
			LogicalType string `json:"logical_type"`
			Repetition  string `json:"repetition_type"`
		}
	}
	if err := json.Unmarshal(head, &desc); err != nil {
		t.Fatalf("duckdb's first line %s: %v", head, err)
	}
	wantColumns := map[string]string{"ID": "BIGINT", "Name": "VARCHAR", "At": "TIMESTAMP WITH TIME ZONE", "Note": "VARCHAR"}
	if !maps.Equal(desc.Columns, wantColumns) {
		t.Errorf("DuckDB reads the columns as %v; want %v", desc.Columns, wantColumns)
	}
	// The files' own schema, one entry a column when every file agrees.
	wantParquet := map[string][2]string{
		"ID": {"INT64", "REQUIRED"}, "Name": {"BYTE_ARRAY", "REQUIRED"},
		"At": {"INT64", "REQUIRED"}, "Note": {"BYTE_ARRAY", "OPTIONAL"},
	}
	if len(desc.Parquet) != len(wantParquet) {
		t.Errorf("the files' schemas, as DuckDB decodes them: %+v; want one entry for each of %v", desc.Parquet, wantParquet)
	}
	for _, c := range desc.Parquet {
		if w := wantParquet[c.Name]; [2]string{c.Type, c.Repetition} != w {
			t.Errorf("column %s is %s %s in the files; want %s %s", c.Name, c.Repetition, c.Type, w[1], w[0])
		}
		if c.Name == "At" && !(strings.Contains(c.LogicalType, "isAdjustedToUTC=1") && strings.Contains(c.LogicalType, "NANOS=NanoSeconds()")) {
			t.Errorf("column At's logical type is %s; want a timestamp of nanoseconds adjusted to UTC", c.LogicalType)
		}
	}
	n := checkRows(t, "duckdb", rows, recs, time.Microsecond)
	if t.Failed() {
		return
	}
	t.Logf("DuckDB read the %d data files of snapshot %d: %d records, each once, every value as written, timestamps to the microsecond; columns %v", len(files), res.SnapshotID, n, desc.Columns)
}
