package icebergtable

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/sink"
)

// snapshotDataFiles lists the data files of tbl's current snapshot.
func snapshotDataFiles(t *testing.T, tbl *table.Table) []iceberg.DataFile {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		t.Fatal("the table has no current snapshot")
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		t.Fatalf("manifest list: %v", err)
	}
	var files []iceberg.DataFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			t.Fatalf("manifest %s holds delete files; the sink only appends", m.FilePath())
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatalf("manifest %s: %v", m.FilePath(), err)
			}
			files = append(files, e.DataFile())
		}
	}
	return files
}

// localPath is where the test server keeps an s3:// location.
func localPath(t *testing.T, loc string) string {
	t.Helper()
	bucket, key, ok := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	if !ok || !strings.HasPrefix(loc, "s3://") {
		t.Fatalf("data file %s: not an s3:// location", loc)
	}
	return filepath.Join(srv.Root(), bucket, filepath.FromSlash(key))
}

// TestDataFileMetrics: every data file Commit appends carries Iceberg
// metrics that agree with its records, read back here row by row (not
// from its footer): value and null counts, lower and upper bounds in
// Iceberg's single-value encoding (strings cut to 16 bytes, the default
// truncate(16) mode), and a split offset per row group. A scan with a
// filter on a bound column then plans only the files that can match.
func TestDataFileMetrics(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl := openTable(t, cat)
	for _, run := range []struct {
		id       string
		from, to int
	}{{"2024-06-01", 0, 900}, {"2024-06-02", 5000, 5900}} {
		if _, err := tbl.Commit(ctx, run.id, "global", writeRun(t, tbl, run.id, events(run.from, run.to-run.from))); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	schema := loaded.Schema()
	id := func(name string) int {
		f, ok := schema.FindFieldByName(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		return f.ID
	}
	le64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	files := snapshotDataFiles(t, loaded)
	if len(files) != 6 {
		t.Fatalf("%d data files; want 3 shards of each of 2 runs", len(files))
	}
	for _, df := range files {
		rows, err := parquet.ReadFile[event](localPath(t, df.FilePath()))
		if err != nil {
			t.Fatalf("%s: %v", df.FilePath(), err)
		}
		var ids, ats []int64
		var names []string
		var noNote int64
		for _, r := range rows {
			ids = append(ids, r.ID)
			ats = append(ats, r.At.UnixNano())
			names = append(names, r.Name)
			if r.Note == nil {
				noNote++
			}
		}
		n := int64(len(rows))
		if df.Count() != n {
			t.Errorf("%s: record count %d; the file holds %d", df.FilePath(), df.Count(), n)
		}
		for _, name := range []string{"ID", "Name", "At", "Note"} {
			if df.ValueCounts()[id(name)] != n || df.ColumnSizes()[id(name)] <= 0 {
				t.Errorf("%s: %s: %d values, %d bytes; want %d values", df.FilePath(), name, df.ValueCounts()[id(name)], df.ColumnSizes()[id(name)], n)
			}
		}
		if got := df.NullValueCounts(); got[id("Note")] != noNote || got[id("ID")] != 0 {
			t.Errorf("%s: null counts %v; want Note %d, ID 0", df.FilePath(), got, noNote)
		}
		lo, hi := df.LowerBoundValues(), df.UpperBoundValues()
		for _, b := range []struct {
			name   string
			lo, hi []byte
		}{
			{"ID", le64(slices.Min(ids)), le64(slices.Max(ids))},
			{"At", le64(slices.Min(ats)), le64(slices.Max(ats))},
			// Names of 11 bytes: under the 16-byte cut.
			{"Name", []byte(slices.Min(names)), []byte(slices.Max(names))},
			{"Note", []byte("every third"), []byte("every third")},
		} {
			if !bytes.Equal(lo[id(b.name)], b.lo) || !bytes.Equal(hi[id(b.name)], b.hi) {
				t.Errorf("%s: %s: bounds [%x, %x]; want [%x, %x]", df.FilePath(), b.name, lo[id(b.name)], hi[id(b.name)], b.lo, b.hi)
			}
		}
		if offs := df.SplitOffsets(); len(offs) == 0 || offs[0] != 4 {
			t.Errorf("%s: split offsets %v; want one per row group, the first at 4", df.FilePath(), offs)
		}
	}

	// The bounds prune: only the second run's files can hold an ID of
	// 5000 or more.
	tasks, err := loaded.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("ID"), int64(5000)))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 3 {
		t.Errorf("a scan for ID >= 5000 plans %d files; want the second run's 3", len(tasks))
	}
	for _, task := range tasks {
		if !strings.Contains(task.File.FilePath(), "/data/2024-06-02/") {
			t.Errorf("a scan for ID >= 5000 plans %s, of the first run", task.File.FilePath())
		}
	}
}

// TestMetricsModes: the table's metrics properties choose what a data
// file carries, as Iceberg defines them: none, counts, truncate(N) (a
// string's bounds cut to N bytes between characters, the upper one raised)
// and full; a mode that is none of these is refused, naming the property.
func TestMetricsModes(t *testing.T) {
	schema, _, err := SchemaOf(reflect.TypeFor[event]())
	if err != nil {
		t.Fatal(err)
	}
	name := func(v string) []byte { return []byte(v) }
	footer := sink.ParquetFooter{Columns: []sink.ColumnStats{{
		Path: []string{"Name"}, Bytes: 100, Values: 10, Nulls: 0,
		Min: name("ab\u00e9cdefgh-low"), Max: name("zz\u00e9cdefgh-high"), HasBounds: true,
	}}}
	nameID := 2
	for _, tc := range []struct {
		props          iceberg.Properties
		counts         bool
		wantLo, wantHi string
	}{
		{iceberg.Properties{}, true, "ab\u00e9cdefgh-low", "zz\u00e9cdefgh-high"}, // truncate(16): both fit
		{iceberg.Properties{propMetricsDefault: "truncate(4)"}, true, "ab\u00e9", "zz\u00ea"},
		{iceberg.Properties{propMetricsDefault: "truncate(3)"}, true, "ab", "z{"},
		{iceberg.Properties{propMetricsDefault: "counts"}, true, "", ""},
		{iceberg.Properties{propMetricsDefault: "none"}, false, "", ""},
		{iceberg.Properties{propMetricsDefault: "none", propMetricsColumn + "Name": "full"}, true, "ab\u00e9cdefgh-low", "zz\u00e9cdefgh-high"},
	} {
		m, err := metricsOf(schema, tc.props, footer)
		if err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		_, counted := m.values[nameID]
		if counted != tc.counts || string(m.lower[nameID]) != tc.wantLo || string(m.upper[nameID]) != tc.wantHi {
			t.Errorf("%v: counts %v, bounds [%q, %q]; want %v, [%q, %q]", tc.props, counted, m.lower[nameID], m.upper[nameID], tc.counts, tc.wantLo, tc.wantHi)
		}
	}
	for _, bad := range []iceberg.Properties{{propMetricsDefault: "truncate(0)"}, {propMetricsColumn + "Name": "some"}} {
		if _, err := metricsOf(schema, bad, footer); err == nil || !strings.Contains(err.Error(), "write.metadata.metrics.") {
			t.Errorf("%v: err %v; want a refusal naming the property", bad, err)
		}
		if err := checkMetricsModes(bad); err == nil {
			t.Errorf("%v: Open would take the table", bad)
		}
	}
}
