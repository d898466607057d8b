package icebergtable

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/sink"
)

var byDay = []PartitionField{Day("At")}

// eventDay is the sink's Destination of a table partitioned by byDay.
func eventDay(e event) (string, error) { return PartitionPath(byDay, e) }

// eventDayLate is a Destination that names the day after the record's.
func eventDayLate(e event) (string, error) {
	e.At = e.At.Add(24 * time.Hour)
	return PartitionPath(byDay, e)
}

func init() {
	register.Function1x2(eventDay)
	register.Function1x2(eventDayLate)
}

// spread makes n records whose times span three days.
func spread(n int) []event {
	recs := events(0, n)
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	for i := range recs {
		recs[i].At = base.Add(time.Duration(i)*3*time.Minute + time.Duration(i)) // 1,000 records: about 50 hours
	}
	return recs
}

// TestPartitionedTable: a table partitioned by day(At), written with the
// sink's Destination returning PartitionPath, gets one partition value per
// data file, the day of every record in it (read back row by row); a scan
// for one day plans only that day's files and finds its records; and a
// table partitioned otherwise is refused when opened.
func TestPartitionedTable(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	ident := table.Identifier{"lake", "events"}
	tbl, err := Open(ctx, cat, ident, reflect.TypeFor[event](), "", byDay...)
	if err != nil {
		t.Fatal(err)
	}
	recs := spread(1000)
	results := writeRun(t, tbl, "2024-06-01", recs, func(c *sink.Config) { c.Destination = eventDay })
	if _, err := tbl.Commit(ctx, "2024-06-01", "global", results); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, cat, [2]int{0, len(recs)})

	loaded, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	days := map[iceberg.Date]int{}
	for _, df := range snapshotDataFiles(t, loaded) {
		part := df.Partition()
		day, ok := part[iceberg.PartitionDataIDStart].(iceberg.Date)
		if !ok || len(part) != 1 {
			t.Fatalf("%s: partition %v; want one day", df.FilePath(), part)
		}
		rows, err := parquet.ReadFile[event](localPath(t, df.FilePath()))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if got := iceberg.Date(r.At.Unix() / 86400); got != day {
				t.Fatalf("%s, of partition day %d, holds ID %d of day %d", df.FilePath(), day, r.ID, got)
			}
		}
		if !strings.Contains(df.FilePath(), "/At_day="+time.Unix(int64(day)*86400, 0).UTC().Format(dayLayout)+"/") {
			t.Errorf("%s: not in its partition's folder", df.FilePath())
		}
		days[day] += len(rows)
	}
	if len(days) != 3 {
		t.Fatalf("%d days: %v; want 3", len(days), days)
	}

	// Partition pruning: the second day only.
	day2 := time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC)
	filter := iceberg.NewAnd(
		iceberg.GreaterThanEqual(iceberg.Reference("At"), day2.Format(time.RFC3339Nano)),
		iceberg.LessThan(iceberg.Reference("At"), day2.Add(24*time.Hour).Format(time.RFC3339Nano)))
	tasks, err := loaded.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := iceberg.Date(day2.Unix() / 86400)
	if len(tasks) == 0 {
		t.Fatal("a scan for the second day plans no file")
	}
	for _, task := range tasks {
		if got := task.File.Partition()[iceberg.PartitionDataIDStart]; got != want {
			t.Errorf("a scan for the second day plans %s, of partition %v", task.File.FilePath(), got)
		}
	}

	// Opened with another partitioning, or none, the table is refused.
	for _, other := range [][]PartitionField{nil, {Hour("At")}, {Day("At"), Identity("ID")}} {
		if _, err := Open(ctx, cat, ident, reflect.TypeFor[event](), "", other...); !errors.Is(err, ErrPartition) {
			t.Errorf("Open with %v: err %v; want ErrPartition", other, err)
		}
	}
}

// TestPartitionRefusals: files that are not of one partition are refused
// before anything is committed: a run written without the partition
// Destination, and one whose Destination names another day than its
// records'.
func TestPartitionRefusals(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	cat := newCatalog(t, bucket)
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "", byDay...)
	if err != nil {
		t.Fatal(err)
	}
	recs := spread(300)
	for _, tc := range []struct {
		run  string
		dest any
		want string
	}{
		{"no-destination", nil, "is not a partition"},
		{"late", eventDayLate, "holds records outside its partition"},
	} {
		results := writeRun(t, tbl, tc.run, recs, func(c *sink.Config) { c.Destination = tc.dest })
		_, err := tbl.Commit(ctx, tc.run, "global", results)
		if !errors.Is(err, ErrPartition) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "PartitionPath") {
			t.Errorf("%s: err %v; want ErrPartition, %q, and the fix", tc.run, err, tc.want)
		}
	}
	if snaps := snapshots(t, cat); len(snaps) != 0 {
		t.Fatalf("%d snapshots after refused runs", len(snaps))
	}
}

// TestPartitionPath: the paths Destination functions return, in Iceberg's
// human form, and the specs refused while a pipeline is built.
func TestPartitionPath(t *testing.T) {
	type rec struct {
		Region string `parquet:"region"`
		Shard  int32
		On     bool
		At     time.Time
		Maybe  *string
		Money  float64
	}
	at := time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.FixedZone("east", 3600))
	r := rec{Region: "eu west/1", Shard: -7, On: true, At: at}
	for _, tc := range []struct {
		fields []PartitionField
		want   string
	}{
		{[]PartitionField{Day("At")}, "At_day=2024-02-29"},
		{[]PartitionField{Hour("At")}, "At_hour=2024-02-29-22"},
		{[]PartitionField{Identity("region"), Identity("Shard"), Identity("On")}, "region=eu+west%2F1/Shard=-7/On=true"},
		{[]PartitionField{Day("At").As("day"), Identity("Shard").As("shard id")}, "day=2024-02-29/shard+id=-7"},
		{[]PartitionField{Identity("region").As("region")}, "region=eu+west%2F1"},
	} {
		got, err := PartitionPath(tc.fields, r)
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.fields, got, err, tc.want)
		}
		if got2, _ := PartitionPath(tc.fields, &r); got2 != got {
			t.Errorf("%v: of a pointer %q; of the value %q", tc.fields, got2, got)
		}
	}
	schema, _, err := SchemaOf(reflect.TypeFor[rec]())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]PartitionField{
		{Day("Region")}, {Identity("At")}, {Identity("Maybe")}, {Identity("Money")},
		{Identity("Nope")}, {{Column: "At", Transform: "month"}}, {Day("At"), Day("At")},
		// Names: another column's, a transform named as its own column,
		// two fields of one name, not UTF-8.
		{Identity("Shard").As("region")}, {Day("At").As("At")}, {Day("At").As("p"), Identity("Shard").As("p")},
		{Identity("Shard").As("\xff")},
	} {
		if _, err := partitionSpec(schema, bad); !errors.Is(err, ErrPartition) {
			t.Errorf("%v: err %v; want ErrPartition", bad, err)
		}
	}
	// A named field: the spec carries the name, the table stage parses
	// destinations by it, and a table partitioned under the default name
	// is another table's spec.
	named := []PartitionField{Identity("Shard").As("shard")}
	nspec, err := partitionSpec(schema, named)
	if err != nil {
		t.Fatal(err)
	}
	if got := nspec.Field(0).Name; got != "shard" {
		t.Errorf("the named field is %q in the spec, want shard", got)
	}
	if diff := sameSpec(nspec, schema, []PartitionField{Identity("Shard")}); diff == "" {
		t.Error("a spec named shard matches fields named Shard")
	}
	if diff := sameSpec(nspec, schema, named); diff != "" {
		t.Errorf("a spec matches its own fields: %s", diff)
	}
	nf := sink.FileResult{Bucket: "b", Key: "k", Destination: "shard=-7", Footer: sink.ParquetFooter{Columns: []sink.ColumnStats{
		{Path: []string{"Shard"}, Min: []byte{0xf9, 0xff, 0xff, 0xff}, Max: []byte{0xf9, 0xff, 0xff, 0xff}, HasBounds: true},
	}}}
	if data, _, err := partitionOf(nspec, schema, nf); err != nil || data[nspec.Field(0).FieldID] != int32(-7) {
		t.Errorf("a file of shard=-7: %v, %v", data, err)
	}
	nf.Destination = "Shard=-7"
	if _, _, err := partitionOf(nspec, schema, nf); !errors.Is(err, ErrPartition) {
		t.Errorf("a destination under the column's name, not the field's: %v", err)
	}
	if _, err := PartitionPath([]PartitionField{Identity("Nope")}, r); !errors.Is(err, ErrPartition) {
		t.Errorf("a missing column: err %v", err)
	}

	// A file whose times reach past its day is refused from its bounds.
	spec, err := partitionSpec(schema, []PartitionField{Day("At")})
	if err != nil {
		t.Fatal(err)
	}
	le := func(tm time.Time) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(tm.UnixNano())) }
	day := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		min, max time.Time
		ok       bool
	}{
		{day, day.Add(24*time.Hour - 1), true},
		{day.Add(-1), day.Add(time.Hour), false},
		{day, day.Add(24 * time.Hour), false},
	} {
		f := sink.FileResult{Bucket: "b", Key: "k", Destination: "At_day=2024-06-01", Footer: sink.ParquetFooter{Columns: []sink.ColumnStats{
			{Path: []string{"At"}, Min: le(tc.min), Max: le(tc.max), HasBounds: true},
		}}}
		part, _, err := partitionOf(spec, schema, f)
		if (err == nil) != tc.ok {
			t.Errorf("[%v, %v]: err %v; want ok %v", tc.min, tc.max, err, tc.ok)
		}
		if tc.ok && part[iceberg.PartitionDataIDStart] != iceberg.Date(day.Unix()/86400) {
			t.Errorf("partition %v", part)
		}
	}
}
