package parquetbody

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/minio/crc64nvme"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/filebody"
	"github.com/s3once/s3once/internal/parquetrow"
)

// testRow is the row of this package's files.
type testRow struct {
	ID   int64
	Name string
	Tags []string
	Blob []byte
	Opt  *int32
}

// testRows makes n rows, sorted by their row encoding as a batch is.
func testRows(n int) []testRow {
	out := make([]testRow, n)
	for i := range out {
		out[i] = testRow{ID: int64(i*7%n) - 3, Name: fmt.Sprintf("row-%03d", i), Tags: []string{"a", fmt.Sprint(i % 3)}}
		if i%2 == 0 {
			v := int32(i)
			out[i].Opt, out[i].Blob = &v, []byte{byte(i), 0}
		}
	}
	return out
}

// records are the row encodings of rows.
func records(t testing.TB, rows []testRow) [][]byte {
	t.Helper()
	c, err := RowCodec(reflect.TypeFor[testRow]())
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, r := range rows {
		b, err := c.Append(nil, reflect.ValueOf(r))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// kind readies the Parquet state of a writer of the output version, with
// row groups of rowGroup records.
func kind(t testing.TB, version int, rowGroup int64, replayed func(context.Context, int64)) *Writers {
	t.Helper()
	row := reflect.TypeFor[testRow]()
	if version >= 2 {
		var err error
		if row, err = ListType(row); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(Options{Row: row, Compression: "snappy", RowGroupBytes: 1 << 20, RowGroupRecords: rowGroup, Version: version, Replayed: replayed})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func fail(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }

// encode writes rows as one file and returns its bytes.
func encode(t testing.TB, version int, rowGroup int64, rows []testRow) []byte {
	t.Helper()
	_, out := write(t, kind(t, version, rowGroup, nil), rows)
	return out
}

// write writes rows as one file of k, and returns its finished body and
// its bytes, checking that the encoder counted every byte it wrote.
func write(t testing.TB, k *Writers, rows []testRow) (filebody.Body, []byte) {
	t.Helper()
	var out bytes.Buffer
	b, err := k.Open(&out, fail)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range records(t, rows) {
		if err := b.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	if n := b.(*body).f.out.n; n != int64(out.Len()) {
		t.Fatalf("the encoder counted %d bytes and wrote %d", n, out.Len())
	}
	return b, out.Bytes()
}

// TestResume: a file checkpointed after a few row groups goes on, in the
// instance that suspended its encoder, with that encoder, and in another
// instance by encoding its records again; either way its bytes are those
// of the uninterrupted file. Records that no longer give the token's bytes
// are a filebody.Stale; a file that does not fit the batch is refused.
func TestResume(t *testing.T) {
	recs := records(t, testRows(20))
	whole := encode(t, 2, 3, testRows(20))
	const at = 10 // records in the file at the checkpoint: 3 row groups ended
	var replays []int64
	replayed := func(_ context.Context, n int64) { replays = append(replays, n) }
	k := kind(t, 2, 3, replayed)
	var out bytes.Buffer
	b, err := k.Open(&out, fail)
	if err != nil {
		t.Fatal(err)
	}
	var fileBytes int64
	for _, rec := range recs[:at] {
		if err := b.Write(rec); err != nil {
			t.Fatal(err)
		}
		fileBytes += int64(len(rec))
	}
	if !b.Synced() || b.Sync() != nil {
		t.Fatal("a Parquet body is not synced at every record")
	}
	point := filebody.Point{Upload: "u1", Size: int64(out.Len()), CRC: crc64nvme.Checksum(out.Bytes()),
		Lines: recs, Start: at, FileRecords: at, FileBytes: fileBytes}
	b.Leave("u1")
	if !bytes.HasPrefix(whole, out.Bytes()) || out.Len() < 8 {
		t.Fatalf("%d bytes at the checkpoint, not a prefix of the whole file", out.Len())
	}
	goOn := func(k *Writers, at filebody.Point) []byte {
		t.Helper()
		rest := bytes.Clone(out.Bytes())
		w := bytes.NewBuffer(rest)
		b, err := k.Resume(context.Background(), w, at, fail)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs[at.Start:] {
			if err := b.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Finish(); err != nil {
			t.Fatal(err)
		}
		return w.Bytes()
	}
	if got := goOn(k, point); !bytes.Equal(got, whole) || len(replays) != 0 {
		t.Fatalf("resumed with the suspended encoder: %d bytes, %d replays; want the whole file's %d, none", len(got), len(replays), len(whole))
	}
	if got := goOn(kind(t, 2, 3, replayed), point); !bytes.Equal(got, whole) || !slices.Equal(replays, []int64{at}) {
		t.Fatalf("resumed elsewhere: %d bytes, replays %v; want the whole file's %d, one of %d records", len(got), replays, len(whole), at)
	}
	// Suspended again, at another upload: a point that does not match it
	// re-encodes, and finds other bytes.
	k2 := kind(t, 2, 3, nil)
	bad := point
	bad.CRC++
	var stale filebody.Stale
	if _, err := k2.Resume(context.Background(), io.Discard, bad, fail); !errors.As(err, &stale) {
		t.Fatalf("records that give other bytes: %v, want a filebody.Stale", err)
	}
	for name, p := range map[string]filebody.Point{
		"starts before the batch": {Upload: "u1", Lines: recs, Start: 2, FileRecords: 3},
		"past the batch":          {Upload: "u1", Lines: recs, Start: 21, FileRecords: 3},
		"other record bytes":      {Upload: "u1", Size: point.Size, CRC: point.CRC, Lines: recs, Start: at, FileRecords: at, FileBytes: fileBytes + 1},
	} {
		if _, err := k2.Resume(context.Background(), io.Discard, p, fail); err == nil || errors.As(err, &stale) {
			t.Errorf("%s: %v, want an error that is not a Stale", name, err)
		}
	}
}

// TestSummary: the summary a file's body keeps of its footer counts each
// column's values and nulls, starts a split at each row group, and bounds
// the values; a long string's bounds are cut to StatBytes in output
// version 2 (and still bound it), whole in version 1.
func TestSummary(t *testing.T) {
	rows := testRows(9)
	rows[8].Name = "row-008" + strings.Repeat("z", 300) // the max
	for _, version := range []int{1, 2} {
		b, file := write(t, kind(t, version, 4, nil), rows)
		s := b.Summary()
		if len(s.SplitOffsets) != 3 || s.SplitOffsets[0] != 4 {
			t.Errorf("v%d: split offsets %v, want 3 from 4 on", version, s.SplitOffsets)
		}
		cols := map[string]filebody.Column{}
		for _, c := range s.Columns {
			cols[strings.Join(c.Path, ".")] = c
		}
		if c := cols["Opt"]; c.Values != 9 || c.Nulls != 4 || !c.HasBounds {
			t.Errorf("v%d: Opt: %+v, want 9 values, 4 nulls, bounds", version, c)
		}
		name := cols["Name"]
		if !name.HasBounds || string(name.Min) != "row-000" {
			t.Errorf("v%d: Name: min %q (%v), want row-000", version, name.Min, name.HasBounds)
		}
		for _, r := range rows {
			if r.Name < string(name.Min) || r.Name > string(name.Max) {
				t.Errorf("v%d: Name bounds [%q, %q] do not hold %q", version, name.Min, name.Max, r.Name)
			}
		}
		switch {
		case version == 1 && string(name.Max) != rows[8].Name:
			t.Errorf("v1: Name's max is %d bytes, want the long value whole", len(name.Max))
		case version == 2 && len(name.Max) > StatBytes:
			t.Errorf("v2: Name's max is %d bytes, want at most %d", len(name.Max), StatBytes)
		}
		// The file reads back with its schema.
		pf, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
		if err != nil || pf.NumRows() != 9 {
			t.Fatalf("v%d: the file reads back with %v rows (%v)", version, pf, err)
		}
	}
}

type listInner struct {
	Codes []int32
	Name  string
}

type listBase struct {
	Keys []string `parquet:"keys,zstd" json:"keys"`
}

type listOuter struct {
	listBase
	Already []int64 `parquet:",list"`
	Blob    []byte
	Inner   listInner
	Many    []listInner
	Ptr     *listInner
	hidden  []string
	Skipped []string `parquet:"-"`
}

type listClash struct {
	listBase
	Keys []string
}

// TestListType checks the type output version 2 writes: embedded fields
// flattened, hidden and skipped fields gone, every slice but []byte tagged
// list (once), other tags kept, nested structs derived; and a record of the
// user's type decodes into it and encodes back to the same bytes.
func TestListType(t *testing.T) {
	lt, err := ListType(reflect.TypeFor[listOuter]())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < lt.NumField(); i++ {
		names = append(names, lt.Field(i).Name)
	}
	if got := strings.Join(names, ","); got != "Keys,Already,Blob,Inner,Many,Ptr" {
		t.Fatalf("fields %s", got)
	}
	tags := map[string]string{
		"Keys": `parquet:"keys,zstd,list" json:"keys"`, "Already": `parquet:",list"`, "Blob": "", "Inner": "",
		"Many": `parquet:",list"`, "Ptr": "",
	}
	for name, want := range tags {
		f, _ := lt.FieldByName(name)
		if string(f.Tag) != want {
			t.Errorf("%s: tag %q, want %q", name, f.Tag, want)
		}
	}
	inner, _ := lt.FieldByName("Inner")
	if f, _ := inner.Type.FieldByName("Codes"); f.Tag.Get("parquet") != ",list" {
		t.Errorf("Inner.Codes: tag %q", f.Tag)
	}
	many, _ := lt.FieldByName("Many")
	ptr, _ := lt.FieldByName("Ptr")
	if many.Type.Elem() != inner.Type || ptr.Type.Elem() != inner.Type {
		t.Errorf("Many %v and Ptr %v do not hold the derived %v", many.Type, ptr.Type, inner.Type)
	}

	v := listOuter{listBase: listBase{Keys: []string{"b", "a"}}, Already: []int64{3}, Blob: []byte{0, 1},
		Inner: listInner{Codes: []int32{}, Name: "x"}, Many: []listInner{{Codes: []int32{1, 2}}, {Name: "y"}},
		Ptr: &listInner{Name: "p"}, hidden: []string{"h"}, Skipped: []string{"s"}}
	user, err := parquetrow.New(reflect.TypeFor[listOuter]())
	if err != nil {
		t.Fatal(err)
	}
	list, err := parquetrow.New(lt)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := user.Append(nil, reflect.ValueOf(v))
	if err != nil {
		t.Fatal(err)
	}
	lv := reflect.New(lt).Elem()
	if err := list.Decode(rec, lv); err != nil {
		t.Fatal(err)
	}
	again, err := list.Append(nil, lv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec, again) {
		t.Errorf("the list type encodes %x, the user's type %x", again, rec)
	}
	if _, err := Schema(lt); err != nil {
		t.Error(err)
	}

	if _, err := ListType(reflect.TypeFor[listClash]()); err == nil {
		t.Error("two fields named Keys made a type")
	}
}

// FuzzBoundFooterStats feeds the footer rewrite bytes that end like a
// Parquet file: it returns an error or a file that still ends with the
// magic, and never panics.
func FuzzBoundFooterStats(f *testing.F) {
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Add([]byte("\x15\x00\x05\x00\x00\x00PAR1"))
	rows := testRows(3)
	rows[0].Name = strings.Repeat("x", 300)
	f.Add(encode(f, 1, 2, rows))
	f.Fuzz(func(t *testing.T, tail []byte) {
		got, _, err := boundFooterStats(tail, 8)
		if err == nil && !bytes.HasSuffix(got, []byte("PAR1")) {
			t.Fatalf("the rewrite ends with %q", got[max(0, len(got)-4):])
		}
	})
}
