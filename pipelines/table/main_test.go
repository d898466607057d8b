package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/internal/testkit/childprog"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// childArgs, when set, makes the test binary run the program's main with
// these arguments (one a line) in its working folder, as `go run .` does.
const childArgs = "S3ONCE_TABLE_CHILD_ARGS"

func TestMain(m *testing.M) { childprog.Main(m, childArgs, main) }

// TestDocsProgram runs the complete program of docs/engines.md ("Writing
// to an Iceberg table") as written, on prism against a test server with
// the bucket demo, as against `make server`: the first run creates the
// table and appends the run's files in one snapshot, and says so on its
// last line; a rerun of the run id keeps the files and adds nothing, and
// says that; a new run id appends the records again (the run id is the
// idempotency key). The table is read back from the catalog after each.
func TestDocsProgram(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	ctx := context.Background()
	if _, err := srv.Client(s3test.ClientOptions{}).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("demo")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(runID string) string {
		return childprog.Run(t, childArgs, dir, "--run-id", runID, "--s3-endpoint", srv.Endpoint())
	}

	line := run("2026-12-05")
	t.Logf("the first run: %s", line)
	snaps := tableSnapshots(t, dir, srv.Endpoint())
	if len(snaps) != 1 {
		t.Fatalf("after the first run the table has %d snapshots, want 1", len(snaps))
	}
	files := summaryInt(t, snaps[0], "added-data-files")
	if got := summaryInt(t, snaps[0], "total-records"); got != 2 {
		t.Errorf("the table holds %d records, want the program's 2", got)
	}
	if want := fmt.Sprintf("committed %d files; appended %d files to the table in 1 snapshot", files, files); line != want {
		t.Errorf("the first run printed %q, want %q", line, want)
	}

	line = run("2026-12-05")
	if snaps := tableSnapshots(t, dir, srv.Endpoint()); len(snaps) != 1 {
		t.Errorf("after the rerun the table has %d snapshots, want still 1", len(snaps))
	}
	if want := fmt.Sprintf("committed %d files (%d kept from an earlier run); the table already held the run (1 snapshot)", files, files); line != want {
		t.Errorf("the rerun printed %q, want %q", line, want)
	}

	run("2026-12-06")
	snaps = tableSnapshots(t, dir, srv.Endpoint())
	if len(snaps) != 2 || summaryInt(t, snaps[1], "total-records") != 4 {
		t.Errorf("after a run with a new run id the table has %d snapshots, want 2 holding 4 records", len(snaps))
	}
}

// tableSnapshots loads the program's table from its catalog in dir and
// returns its snapshots, oldest first.
func tableSnapshots(t *testing.T, dir, endpoint string) []table.Snapshot {
	t.Helper()
	cat, err := catalog.Load(context.Background(), "local", iceberg.Properties{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"), "sql.driver": "sqlite", "sql.dialect": "sqlite",
		icebergio.S3EndpointURL: endpoint, icebergio.S3Region: s3test.Region,
		icebergio.S3AccessKeyID: s3test.AccessKey, icebergio.S3SecretAccessKey: s3test.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	for _, s := range snaps {
		if s.Summary == nil || s.Summary.Properties[icebergtable.PropRunID] == "" {
			t.Errorf("snapshot %d carries no run id", s.SnapshotID)
		}
	}
	return snaps
}

func summaryInt(t *testing.T, s table.Snapshot, key string) int {
	t.Helper()
	n, err := strconv.Atoi(s.Summary.Properties[key])
	if err != nil {
		t.Fatalf("snapshot %d: summary %s: %v", s.SnapshotID, key, err)
	}
	return n
}
