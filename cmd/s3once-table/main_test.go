package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/icebergtable"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

type event struct {
	ID   int64
	Name string
}

func init() { beam.RegisterType(reflect.TypeFor[event]()) }

func TestMain(m *testing.M) { os.Exit(ptest.MainRet(m)) }

// tableFixture: a test server, a SQLite catalog and the table lake.events
// with one snapshot per run id, written with icebergtable.Write.
type tableFixture struct {
	srv         *s3test.Server
	bucket, uri string
	common      []string
}

func newTableFixture(t *testing.T, runs ...string) tableFixture {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_REGION", s3test.Region)
	f := tableFixture{srv: srv, bucket: srv.Bucket(t), uri: "file:" + filepath.Join(t.TempDir(), "catalog.db")}
	cfg := icebergtable.Config{CatalogName: "local", Table: "lake.events",
		CatalogProperties: map[string]string{"type": "sql", "uri": f.uri, "sql.driver": "sqlite", "sql.dialect": "sqlite",
			"warehouse": "s3://" + f.bucket + "/lake"},
		Sink: sink.Config{Connection: sink.Connection{Endpoint: srv.Endpoint(), PathStyle: true, Region: s3test.Region}}}
	for i, run := range runs {
		cfg.RunID = run
		p, s := beam.NewPipelineWithRoot()
		if _, err := icebergtable.TryWrite(s, beam.Create(s, event{int64(i), run}), cfg); err != nil {
			t.Fatal(err)
		}
		if err := ptest.Run(p); err != nil {
			t.Fatalf("run %s: %v", run, err)
		}
	}
	f.common = []string{"--catalog-uri", f.uri, "--table", "lake.events", "--s3-endpoint", srv.Endpoint(), "--region", s3test.Region}
	return f
}

func (f tableFixture) snapshots(t *testing.T) int {
	t.Helper()
	cat, err := catalog.Load(context.Background(), "local", iceberg.Properties{"type": "sql", "uri": f.uri, "sql.driver": "sqlite", "sql.dialect": "sqlite",
		"s3.endpoint": f.srv.Endpoint(), "s3.region": s3test.Region})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots())
}

func (f tableFixture) keys(t *testing.T) []string {
	t.Helper()
	return s3test.Keys(t, f.srv.Client(s3test.ClientOptions{}), f.bucket, "")
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The command expires a table's snapshots to --retain-last and deletes no
// object; a dry run of orphan removal then names the files expiry left
// unreferenced and deletes nothing; a real run under the minimum safety
// age is refused with one line and exit 1.
func TestExpireAndRemoveOrphans(t *testing.T) {
	f := newTableFixture(t, "day-1", "day-2", "day-3")
	if n := f.snapshots(t); n != 3 {
		t.Fatalf("the fixture's table has %d snapshots, want 3", n)
	}
	before := f.keys(t)

	code, out, errOut := runCmd(t, append([]string{"expire", "--older-than", "0s", "--retain-last", "1"}, f.common...)...)
	if code != 0 || !strings.HasPrefix(out, "expired 2 snapshots of lake.events; 1 kept") {
		t.Fatalf("expire: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := f.snapshots(t); n != 1 {
		t.Errorf("after expire the table has %d snapshots, want 1", n)
	}
	after := f.keys(t)
	for _, k := range before {
		if !contains(after, k) {
			t.Errorf("expire deleted %s", k)
		}
	}

	code, out, errOut = runCmd(t, append([]string{"remove-orphans", "--dry-run", "--older-than", "1ns"}, f.common...)...)
	if code != 0 || !strings.Contains(out, "would delete s3://") || !strings.Contains(out, "in run folders not abandoned") {
		t.Fatalf("remove-orphans --dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := f.keys(t); len(got) != len(after) {
		t.Errorf("a dry run changed the bucket: %d objects, were %d", len(got), len(after))
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, "/_s3once") {
			t.Errorf("a dry run would delete s3once's own object: %s", line)
		}
	}

	code, out, errOut = runCmd(t, append([]string{"remove-orphans", "--older-than", "30m"}, f.common...)...)
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "safety age") {
		t.Errorf("remove-orphans under the minimum age: exit %d, stdout %q, stderr %q; want exit 1 and one line", code, out, errOut)
	}
	if got := f.keys(t); len(got) != len(after) {
		t.Errorf("a refused removal changed the bucket: %d objects, were %d", len(got), len(after))
	}
}

// The command compacts the table's small files (one per run) into one, as
// one snapshot; a rerun with the same id finds it and adds nothing.
func TestCompact(t *testing.T) {
	f := newTableFixture(t, "day-1", "day-2", "day-3")
	args := append([]string{"compact", "--id", "c-1", "--min-files", "2", "--target-bytes", "1048576"}, f.common...)
	code, out, errOut := runCmd(t, args...)
	if code != 0 || !strings.HasPrefix(out, "compaction c-1 of lake.events: 3 files") || !strings.Contains(out, "in 1 partitions replaced by 1 in snapshot") || strings.Count(out, "\n") != 1 {
		t.Fatalf("compact: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := f.snapshots(t); n != 4 {
		t.Errorf("after compact the table has %d snapshots, want 4", n)
	}
	code, out, errOut = runCmd(t, args...)
	if code != 0 || !strings.HasPrefix(out, "compaction c-1 of lake.events had landed in snapshot") {
		t.Fatalf("compact again: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := f.snapshots(t); n != 4 {
		t.Errorf("a rerun of the compaction: %d snapshots, want 4", n)
	}
}

// Usage mistakes exit 2 before any catalog or S3 call; a missing table
// exits 1 with one line naming it.
func TestUsageAndMissingTable(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"compact"},
		{"compact", "--table", "t", "--catalog-uri", "file:x.db"},
		{"expire"},
		{"expire", "--table", "lake.events"},
		{"expire", "--catalog-uri", "file:x.db"},
		{"expire", "--table", "t", "--catalog-uri", "file:x.db", "extra"},
		{"remove-orphans", "--no-such-flag"},
	} {
		if code, out, _ := runCmd(t, args...); code != 2 || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit 2", args, code, out)
		}
	}
	uri := "file:" + filepath.Join(t.TempDir(), "empty.db")
	code, _, errOut := runCmd(t, "expire", "--catalog-uri", uri, "--table", "lake.nothing")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "lake.nothing") {
		t.Errorf("a missing table: exit %d, stderr %q; want exit 1 and one line naming it", code, errOut)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
