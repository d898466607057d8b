package sink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	xreader "github.com/xitongsys/parquet-go/reader"
	xsource "github.com/xitongsys/parquet-go/source"

	"github.com/s3once/s3once/internal/parquetbody"
	"github.com/s3once/s3once/internal/parquetrow"
)

// pqEvent is the element type of the Parquet tests: scalars of every width,
// a time, optional values, nested and repeated fields.
type pqEvent struct {
	ID     int64
	Name   string
	Score  float64
	Ratio  float32
	At     time.Time
	Seen   *time.Time
	Tags   []string
	Blob   []byte
	Nested pqInner
	Opt    *int32
	Items  []pqItem
	Flag   bool
	Small  int8
	U      uint16
	skip   int    // unexported: not written
	Note   string `parquet:"-"`
}

type pqInner struct {
	Country string
	Zip     int32
}

type pqItem struct {
	SKU string
	Qty uint32
}

func init() {
	beam.RegisterType(reflect.TypeFor[pqEvent]())
}

// pqEvents makes n events, the same for the same seed.
func pqEvents(n int, seed uint64) []pqEvent {
	r := rand.New(rand.NewPCG(seed, 11))
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	countries := []string{"fr", "de", "jp", "br", "ca"}
	out := make([]pqEvent, n)
	for i := range out {
		e := pqEvent{
			ID:     int64(i) - int64(n/2),
			Name:   fmt.Sprintf("event-%d-%s", i, strings.Repeat("x", r.IntN(30))),
			Score:  r.NormFloat64() * 100,
			Ratio:  r.Float32(),
			At:     base.Add(time.Duration(r.Int64N(int64(48 * time.Hour)))),
			Nested: pqInner{Country: countries[r.IntN(len(countries))], Zip: r.Int32N(99999)},
			Flag:   r.IntN(2) == 0,
			Small:  int8(r.IntN(256) - 128),
			U:      uint16(r.IntN(65536)),
		}
		if r.IntN(3) > 0 {
			s := e.At.Add(-time.Duration(r.IntN(1e9)))
			e.Seen = &s
		}
		for j := r.IntN(4); j > 0; j-- {
			e.Tags = append(e.Tags, fmt.Sprintf("t%d", r.IntN(10)))
		}
		if r.IntN(2) == 0 {
			e.Blob = []byte{byte(i), 0, byte(i >> 8)}
		}
		if r.IntN(2) == 0 {
			v := r.Int32()
			e.Opt = &v
		}
		for j := r.IntN(3); j > 0; j-- {
			e.Items = append(e.Items, pqItem{SKU: fmt.Sprintf("sku-%d", r.IntN(50)), Qty: r.Uint32N(10)})
		}
		out[i] = e
	}
	return out
}

func pqEncode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := parquetFormat{}.Append(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pqDecode[T any](t testing.TB, b []byte) T {
	t.Helper()
	c, err := parquetbody.RowCodec(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := c.Decode(b, reflect.ValueOf(&v).Elem()); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestParquetRowRoundTrip checks that the row encoding is lossless where Go
// values differ in ways DeepEqual misses or Parquet cannot tell: NaN
// payloads, negative zero, nanosecond times, nil versus empty slices, zero
// bytes inside strings.
func TestParquetRowRoundTrip(t *testing.T) {
	type edge struct {
		F64   float64
		F32   float32
		Neg0  float64
		Nil   []string
		Empty []string
		NilB  []byte
		EmpB  []byte
		Zeros string
		At    time.Time
		P     *time.Time
		Fixed [4]byte
		Inner []pqItem
	}
	nan64 := math.Float64frombits(0x7ff8_0000_dead_beef)
	nan32 := math.Float32frombits(0x7fc0_0abc)
	at := time.Date(2262, 4, 11, 23, 47, 16, 854775807, time.UTC)
	in := edge{F64: nan64, F32: nan32, Neg0: math.Copysign(0, -1), Empty: []string{}, EmpB: []byte{},
		Zeros: "a\x00b\x00\x00", At: at, P: &at, Fixed: [4]byte{0, 1, 0, 2}, Inner: []pqItem{{"x\x00", 7}}}
	b := pqEncode(t, in)
	out := pqDecode[edge](t, b)
	if math.Float64bits(out.F64) != math.Float64bits(nan64) || math.Float32bits(out.F32) != math.Float32bits(nan32) {
		t.Errorf("NaN payloads: got %x %x", math.Float64bits(out.F64), math.Float32bits(out.F32))
	}
	if !math.Signbit(out.Neg0) {
		t.Error("negative zero came back positive")
	}
	if out.Nil != nil || out.Empty == nil || len(out.Empty) != 0 || out.NilB != nil || out.EmpB == nil {
		t.Errorf("nil and empty slices: %#v %#v %#v %#v", out.Nil, out.Empty, out.NilB, out.EmpB)
	}
	if out.Zeros != in.Zeros || out.Fixed != in.Fixed || !reflect.DeepEqual(out.Inner, in.Inner) {
		t.Errorf("got %q %v %v", out.Zeros, out.Fixed, out.Inner)
	}
	if !out.At.Equal(at) || out.At.Nanosecond() != 854775807 || out.P == nil || !out.P.Equal(at) {
		t.Errorf("times: got %v, %v", out.At, out.P)
	}
	if again := pqEncode(t, out); !bytes.Equal(again, b) {
		t.Errorf("re-encoding the decoded row gives other bytes:\n%x\n%x", again, b)
	}

	// Random events: decode(encode(e)) encodes to the same bytes, and is e.
	for _, e := range pqEvents(300, 5) {
		b := pqEncode(t, e)
		d := pqDecode[pqEvent](t, b)
		if !bytes.Equal(pqEncode(t, d), b) {
			t.Fatalf("event %d: not stable", e.ID)
		}
		d.At, e.At = d.At.UTC(), e.At.UTC()
		if e.Seen != nil {
			s := e.Seen.UTC()
			e.Seen = &s
		}
		e.Note = ""
		if !reflect.DeepEqual(d, e) {
			t.Fatalf("event %d:\n got %+v\nwant %+v", e.ID, d, e)
		}
	}
}

// TestParquetRowOrder checks that rows sort bytewise as their leading
// fields compare.
func TestParquetRowOrder(t *testing.T) {
	type row struct {
		I int32
		F float64
		S string
	}
	r := rand.New(rand.NewPCG(3, 3))
	vals := []float64{math.Inf(-1), -1e300, -1, -0.5, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 0.5, 1, 1e300, math.Inf(1)}
	strs := []string{"", "\x00", "\x00\x00", "\x00a", "a", "a\x00", "ab", "b"}
	var rows []row
	for i := 0; i < 400; i++ {
		rows = append(rows, row{I: r.Int32N(7) - 3, F: vals[r.IntN(len(vals))], S: strs[r.IntN(len(strs))]})
	}
	cmp := func(a, b row) int {
		switch {
		case a.I != b.I:
			return int(a.I) - int(b.I)
		case a.F < b.F:
			return -1
		case a.F > b.F:
			return 1
		}
		return strings.Compare(a.S, b.S)
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		got := bytes.Compare(pqEncode(t, a), pqEncode(t, b))
		want := cmp(a, b)
		if (got < 0) != (want < 0) || (got > 0) != (want > 0) {
			t.Fatalf("%+v vs %+v: bytes compare %d, values %d", a, b, got, want)
		}
	}
}

// TestParquetRowGolden pins the row encoding.
func TestParquetRowGolden(t *testing.T) {
	type row struct {
		B  bool
		I8 int8
		I  int
		U  uint16
		F  float32
		S  string
		Bs []byte
		P  *int16
		L  []uint8s
		T  time.Time
	}
	p := int16(-2)
	got := pqEncode(t, row{B: true, I8: -1, I: 1, U: 0x1234, F: -1.5, S: "a\x00", Bs: nil, P: &p, L: []uint8s{{1}, {2}}, T: time.Unix(0, 5)})
	want := "" +
		"01" + // B
		"7f" + // I8 -1: 0xff ^ 0x80
		"8000000000000001" + // I
		"1234" + // U
		"403fffff" + // F -1.5: ^0xbfc00000
		"6100ff0001" + // S
		"00" + // Bs nil
		"017ffe" + // P
		"01" + "01" + "01" + "01" + "02" + "00" + // L: present, {1}, {2}, end
		"8000000000000005" // T
	if fmt.Sprintf("%x", got) != want {
		t.Errorf("got  %x\nwant %s", got, want)
	}
}

type uint8s struct{ V uint8 }

// TestParquetRowDecodeRefuses checks that the decoder takes canonical
// encodings only.
func TestParquetRowDecodeRefuses(t *testing.T) {
	type row struct {
		B bool
		S string
		P *int8
	}
	c, err := parquetbody.RowCodec(reflect.TypeFor[row]())
	if err != nil {
		t.Fatal(err)
	}
	good := pqEncode(t, row{B: true, S: "a\x00"})
	if err := c.Decode(good, reflect.New(c.Type()).Elem()); err != nil {
		t.Fatalf("good row: %v", err)
	}
	for name, b := range map[string][]byte{
		"empty":          {},
		"bad bool":       {2, 0, 1, 0},
		"bad escape":     {1, 'a', 0, 7, 0, 1, 0},
		"unterminated":   {1, 'a'},
		"bad presence":   {1, 0, 1, 9},
		"trailing bytes": append(slices.Clone(good), 0),
		"cut":            good[:len(good)-1],
	} {
		err := c.Decode(b, reflect.New(c.Type()).Elem())
		if !errors.Is(err, parquetrow.ErrMalformed) {
			t.Errorf("%s: %v, want parquetrow.ErrMalformed", name, err)
		}
	}
}

// FuzzParquetRowDecode checks that the row decoder never panics, and that
// what it accepts encodes back to the same bytes.
func FuzzParquetRowDecode(f *testing.F) {
	for _, e := range pqEvents(5, 1) {
		f.Add(pqEncode(f, e))
	}
	f.Add([]byte{})
	c, err := parquetbody.RowCodec(reflect.TypeFor[pqEvent]())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := reflect.New(c.Type()).Elem()
		if err := c.Decode(b, v); err != nil {
			return
		}
		again, err := c.Append(nil, v)
		if err != nil {
			return // a time out of range cannot be encoded
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("decoded %x, encodes to %x", b, again)
		}
	})
}

// TestParquetRefusesTypes checks that types without a deterministic Parquet
// form fail while the pipeline is built, naming the field.
func TestParquetRefusesTypes(t *testing.T) {
	type withMap struct {
		A int
		M map[string]int
	}
	type inner struct{ C chan int }
	type nested struct {
		A  int
		In []inner
	}
	type withIface struct{ X any }
	type withFunc struct{ F func() }
	type withArray struct{ A [3]int }
	type self struct{ Next *self }
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[withMap](), "withMap.M"},
		{reflect.TypeFor[nested](), "nested.In[].C"},
		{reflect.TypeFor[withIface](), "withIface.X"},
		{reflect.TypeFor[withFunc](), "withFunc.F"},
		{reflect.TypeFor[withArray](), "withArray.A"},
		{reflect.TypeFor[self](), "self.Next"},
		{reflect.TypeFor[string](), "writes structs"},
	} {
		err := parquetFormat{}.CheckType(tc.t)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error naming %s", tc.t, err, tc.want)
		}
	}
	if err := (parquetFormat{}).CheckType(reflect.TypeFor[pqEvent]()); err != nil {
		t.Errorf("pqEvent: %v", err)
	}
	// A tag parquet-go cannot map is an error, not a panic.
	type badTag struct {
		A string `parquet:"a,notanoption"`
	}
	if err := (parquetFormat{}).CheckType(reflect.TypeFor[badTag]()); err == nil {
		t.Error("a bad tag passed")
	}
	// A zero time is refused when encoded, with a hint.
	if _, err := (parquetFormat{}).Append(nil, struct{ T time.Time }{}); err == nil || !strings.Contains(err.Error(), "*time.Time") {
		t.Errorf("zero time: %v", err)
	}
}

// TestParquetConfig checks the Parquet settings' validation.
func TestParquetConfig(t *testing.T) {
	cfg := testConfig("bucket-a", "p")
	cfg.Format = "parquet"
	cfg.Compression = "gzip"
	err := cfg.Validate()
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "does not apply to Format \"parquet\"") {
		t.Errorf("file-level compression with Parquet: %v", err)
	}
	cfg.Compression = ""
	cfg.Parquet = ParquetOptions{Compression: "lzo", RowGroupBytes: 10, RowGroupRecords: -1}
	err = cfg.Validate()
	for _, want := range []string{"Parquet.Compression \"lzo\"", "Parquet.RowGroupBytes 10", "Parquet.RowGroupRecords -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v; want it to mention %s", err, want)
		}
	}
	cfg.Parquet = ParquetOptions{}
	s, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	if s.Parquet == nil || s.Parquet.Compression != "snappy" || s.Parquet.RowGroupBytes != DefaultRowGroupBytes {
		t.Errorf("defaults: %+v", s.Parquet)
	}
	cfg.Format = "jsonl"
	cfg.Parquet = ParquetOptions{Compression: "zstd"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Parquet files only") {
		t.Errorf("Parquet settings with jsonl: %v", err)
	}
}

// pqSettings is the settings of a Parquet test run into prefix.
func pqSettings(t testing.TB, bucket, prefix string, edit func(*Config)) settings {
	t.Helper()
	cfg := testConfig(bucket, prefix)
	cfg.Format = "parquet"
	if edit != nil {
		edit(&cfg)
	}
	s, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	s.bindParquetRow(reflect.TypeFor[pqEvent]())
	return s
}

// pqBatch is the batch the sink makes of events: their rows, sorted.
func pqBatch(t testing.TB, events []pqEvent) batch {
	t.Helper()
	b := batch{Window: "global", Shard: 0, Shards: 1, SubBatches: 1}
	for _, e := range events {
		b.Lines = append(b.Lines, pqEncode(t, e))
	}
	slices.SortFunc(b.Lines, bytes.Compare)
	return b
}

// bytesFile is a read-only xitongsys source over a byte slice.
type bytesFile struct {
	*bytes.Reader
	data []byte
}

func newBytesFile(b []byte) bytesFile { return bytesFile{bytes.NewReader(b), b} }

func (f bytesFile) Write([]byte) (int, error)                  { return 0, errors.New("read-only") }
func (f bytesFile) Close() error                               { return nil }
func (f bytesFile) Open(string) (xsource.ParquetFile, error)   { return newBytesFile(f.data), nil }
func (f bytesFile) Create(string) (xsource.ParquetFile, error) { return nil, errors.New("read-only") }

// pqEventX is pqEvent in xitongsys's tag dialect, for the independent reader.
type pqEventX struct {
	ID     int64    `parquet:"name=ID, type=INT64"`
	Name   string   `parquet:"name=Name, type=BYTE_ARRAY, convertedtype=UTF8"`
	Score  float64  `parquet:"name=Score, type=DOUBLE"`
	Ratio  float32  `parquet:"name=Ratio, type=FLOAT"`
	At     int64    `parquet:"name=At, type=INT64"`
	Seen   *int64   `parquet:"name=Seen, type=INT64, repetitiontype=OPTIONAL"`
	Tags   []string `parquet:"name=Tags, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=REPEATED"`
	Blob   string   `parquet:"name=Blob, type=BYTE_ARRAY"`
	Nested struct {
		Country string `parquet:"name=Country, type=BYTE_ARRAY, convertedtype=UTF8"`
		Zip     int32  `parquet:"name=Zip, type=INT32"`
	} `parquet:"name=Nested"`
	Opt   *int32    `parquet:"name=Opt, type=INT32, repetitiontype=OPTIONAL"`
	Items []pqItemX `parquet:"name=Items, repetitiontype=REPEATED"`
	Flag  bool      `parquet:"name=Flag, type=BOOLEAN"`
	Small int32     `parquet:"name=Small, type=INT32, convertedtype=INT_8"`
	U     int32     `parquet:"name=U, type=INT32, convertedtype=UINT_16"`
}

type pqItemX struct {
	SKU string `parquet:"name=SKU, type=BYTE_ARRAY, convertedtype=UTF8"`
	Qty int32  `parquet:"name=Qty, type=INT32, convertedtype=UINT_32"`
}

// pqEventListX is pqEventX as output version 2 writes it: the slices as
// three-level LISTs.
type pqEventListX struct {
	ID     int64    `parquet:"name=ID, type=INT64"`
	Name   string   `parquet:"name=Name, type=BYTE_ARRAY, convertedtype=UTF8"`
	Score  float64  `parquet:"name=Score, type=DOUBLE"`
	Ratio  float32  `parquet:"name=Ratio, type=FLOAT"`
	At     int64    `parquet:"name=At, type=INT64"`
	Seen   *int64   `parquet:"name=Seen, type=INT64, repetitiontype=OPTIONAL"`
	Tags   []string `parquet:"name=Tags, type=MAP, convertedtype=LIST, valuetype=BYTE_ARRAY, valueconvertedtype=UTF8"`
	Blob   string   `parquet:"name=Blob, type=BYTE_ARRAY"`
	Nested struct {
		Country string `parquet:"name=Country, type=BYTE_ARRAY, convertedtype=UTF8"`
		Zip     int32  `parquet:"name=Zip, type=INT32"`
	} `parquet:"name=Nested"`
	Opt   *int32    `parquet:"name=Opt, type=INT32, repetitiontype=OPTIONAL"`
	Items []pqItemX `parquet:"name=Items, type=MAP, convertedtype=LIST"`
	Flag  bool      `parquet:"name=Flag, type=BOOLEAN"`
	Small int32     `parquet:"name=Small, type=INT32, convertedtype=INT_8"`
	U     int32     `parquet:"name=U, type=INT32, convertedtype=UINT_16"`
}

// pqSchemaX is the independent reader's schema of an output version's files.
func pqSchemaX(version int) any {
	if version >= 2 {
		return new(pqEventListX)
	}
	return new(pqEventX)
}

// readParquetX reads every record of file with the independent reader, in
// the dialect of the output version.
func readParquetX(t testing.TB, file []byte, n, version int) []pqEventX {
	t.Helper()
	pr, err := xreader.NewParquetReader(newBytesFile(file), pqSchemaX(version), 1)
	if err != nil {
		t.Fatalf("independent reader: %v", err)
	}
	defer pr.ReadStop()
	if version < 2 {
		got := make([]pqEventX, n)
		if err := pr.Read(&got); err != nil {
			t.Fatalf("independent reader: %v", err)
		}
		return got
	}
	lists := make([]pqEventListX, n)
	if err := pr.Read(&lists); err != nil {
		t.Fatalf("independent reader: %v", err)
	}
	got := make([]pqEventX, n)
	for i, l := range lists {
		got[i] = pqEventX(l)
	}
	return got
}

// checkParquetFile reads file with xitongsys/parquet-go, a Parquet
// implementation other than the writer's, and checks every record field by
// field against want (in the file's order), the footer's row groups and
// their row counts, the statistics of the ID and Score columns, and the
// created_by of the output version.
func checkParquetFile(t testing.TB, file []byte, want []pqEvent, rowGroups, version int) {
	t.Helper()
	pr, err := xreader.NewParquetReader(newBytesFile(file), pqSchemaX(version), 1)
	if err != nil {
		t.Fatalf("independent reader: %v", err)
	}
	defer pr.ReadStop()
	ft := pr.Footer
	if ft.GetCreatedBy() != parquetbody.CreatedBy(version) {
		t.Errorf("created_by %q, want %q", ft.GetCreatedBy(), parquetbody.CreatedBy(version))
	}
	if ft.NumRows != int64(len(want)) || pr.GetNumRows() != int64(len(want)) {
		t.Fatalf("footer says %d rows, want %d", ft.NumRows, len(want))
	}
	if len(ft.RowGroups) != rowGroups {
		t.Errorf("%d row groups in the footer, want %d", len(ft.RowGroups), rowGroups)
	}
	// Each row group: its rows, its column chunks inside the file, and the
	// statistics of ID (int64) and Score (double) equal to its records'.
	first := 0
	for g, rg := range ft.RowGroups {
		n := int(rg.NumRows)
		if n <= 0 || first+n > len(want) {
			t.Fatalf("row group %d holds %d rows after %d of %d", g, n, first, len(want))
		}
		minID, maxID := want[first].ID, want[first].ID
		minS, maxS := want[first].Score, want[first].Score
		for _, e := range want[first : first+n] {
			minID, maxID = min(minID, e.ID), max(maxID, e.ID)
			minS, maxS = min(minS, e.Score), max(maxS, e.Score)
		}
		for _, cc := range rg.Columns {
			md := cc.MetaData
			if md == nil || md.DataPageOffset < 4 || md.DataPageOffset+md.TotalCompressedSize > int64(len(file)) {
				t.Fatalf("row group %d: column chunk %v outside the file", g, md)
			}
			path := strings.Join(md.PathInSchema, ".")
			st := md.Statistics
			switch path {
			case "ID":
				if st == nil || int64(binary.LittleEndian.Uint64(st.MinValue)) != minID || int64(binary.LittleEndian.Uint64(st.MaxValue)) != maxID {
					t.Errorf("row group %d: ID statistics %v, want [%d, %d]", g, st, minID, maxID)
				}
			case "Score":
				if st == nil || math.Float64frombits(binary.LittleEndian.Uint64(st.MinValue)) != minS || math.Float64frombits(binary.LittleEndian.Uint64(st.MaxValue)) != maxS {
					t.Errorf("row group %d: Score statistics %v, want [%g, %g]", g, st, minS, maxS)
				}
			case "Seen":
				nulls := int64(0)
				for _, e := range want[first : first+n] {
					if e.Seen == nil {
						nulls++
					}
				}
				if st == nil || st.NullCount == nil || *st.NullCount != nulls {
					t.Errorf("row group %d: Seen null count %v, want %d", g, st, nulls)
				}
			}
			if md.NumValues < int64(n) && !strings.HasPrefix(path, "Tags.") && path != "Tags" && !strings.HasPrefix(path, "Items.") {
				t.Errorf("row group %d: column %s has %d values for %d rows", g, path, md.NumValues, n)
			}
		}
		first += n
	}
	if first != len(want) {
		t.Fatalf("row groups hold %d rows, want %d", first, len(want))
	}
	got := readParquetX(t, file, len(want), version)
	for i, w := range want {
		g := got[i]
		eq := g.ID == w.ID && g.Name == w.Name && math.Float64bits(g.Score) == math.Float64bits(w.Score) &&
			math.Float32bits(g.Ratio) == math.Float32bits(w.Ratio) && g.At == w.At.UnixNano() &&
			(g.Seen == nil) == (w.Seen == nil) && (w.Seen == nil || *g.Seen == w.Seen.UnixNano()) &&
			slices.Equal(g.Tags, w.Tags) && g.Blob == string(w.Blob) &&
			g.Nested.Country == w.Nested.Country && g.Nested.Zip == w.Nested.Zip &&
			(g.Opt == nil) == (w.Opt == nil) && (w.Opt == nil || *g.Opt == *w.Opt) &&
			len(g.Items) == len(w.Items) && g.Flag == w.Flag && g.Small == int32(w.Small) && g.U == int32(w.U)
		for j := 0; eq && j < len(w.Items); j++ {
			eq = g.Items[j].SKU == w.Items[j].SKU && uint32(g.Items[j].Qty) == w.Items[j].Qty
		}
		if !eq {
			t.Fatalf("record %d:\n read %+v\nwrote %+v", i, g, w)
		}
	}
}

// sortedEvents is events in the order the sink writes them: by row bytes.
func sortedEvents(t testing.TB, events []pqEvent) []pqEvent {
	t.Helper()
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b pqEvent) int { return bytes.Compare(pqEncode(t, a), pqEncode(t, b)) })
	return out
}

// TestParquetIndependentReader writes a batch as Parquet through the writer
// and reads it back with another implementation: every record, the row
// groups (cut by RowGroupRecords and by RowGroupBytes), the statistics.
func TestParquetIndependentReader(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	events := pqEvents(1000, 1)
	b := pqBatch(t, events)
	want := sortedEvents(t, events)
	var rowBytes int64
	for _, l := range b.Lines {
		rowBytes += int64(len(l))
	}
	for _, tc := range []struct {
		name      string
		opts      ParquetOptions
		rowGroups int
	}{
		{"one-group-snappy", ParquetOptions{}, 1},
		{"records-zstd", ParquetOptions{Compression: "zstd", RowGroupRecords: 300}, 4},
		{"bytes-gzip", ParquetOptions{Compression: "gzip", RowGroupBytes: 16 << 10}, int((rowBytes + 16<<10 - 1) / (16 << 10))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pqSettings(t, bucket, tc.name, func(c *Config) { c.Parquet = tc.opts })
			r := &runner{t: t, s: s, client: c, rng: rand.New(rand.NewPCG(0, 0)), plain: true}
			r.commitAll(r.run(b))
			objs := relative(t, c, bucket, tc.name)
			if len(objs) != 1 {
				t.Fatalf("%d files, want 1", len(objs))
			}
			for k, v := range objs {
				if !strings.HasSuffix(k, ".parquet") {
					t.Errorf("file %s", k)
				}
				// The row-group count for bytes may be one less when the last
				// group closes exactly at the end.
				groups := tc.rowGroups
				if tc.opts.RowGroupBytes > 0 {
					groups = pqGroupsByBytes(b.Lines, tc.opts.RowGroupBytes)
				}
				checkParquetFile(t, v, want, groups, LatestOutputVersion)
			}
		})
	}
}

// pqGroupsByBytes is the number of row groups RowGroupBytes cuts lines into.
func pqGroupsByBytes(lines [][]byte, limit int64) int {
	n, acc := 0, int64(0)
	for _, l := range lines {
		acc += int64(len(l))
		if acc >= limit {
			n++
			acc = 0
		}
	}
	if acc > 0 {
		n++
	}
	return n
}

// TestParquetAcrossCheckpoints writes one Parquet file of many row groups
// while the writer self-checkpoints at most sync points and bundles crash:
// resumes in the same DoFn instance go on with the encoder they suspended,
// resumes elsewhere re-encode the file's records; either way the file stays
// one file, its bytes those of an uninterrupted run, and it reads back.
func TestParquetAcrossCheckpoints(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	events := pqEvents(1500, 2)
	b := pqBatch(t, events)
	want := sortedEvents(t, events)
	cfg := func(prefix string) settings {
		return pqSettings(t, bucket, prefix, func(c *Config) {
			c.CheckpointBytes = 1 << 10
			c.InlineTailMax = 512
			c.Parquet.RowGroupBytes = 8 << 10
		})
	}
	ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(0, 0)), plain: true}
	refFiles := ref.run(b)
	ref.commitAll(refFiles)
	refObjs := relative(t, c, bucket, "ref")
	if len(refObjs) != 1 {
		t.Fatalf("the reference run wrote %d files; want 1", len(refObjs))
	}
	var refKey string
	for k, v := range refObjs {
		refKey = k
		checkParquetFile(t, v, want, pqGroupsByBytes(b.Lines, 8<<10), LatestOutputVersion)
	}

	for _, tc := range []struct {
		name   string
		shared bool
		crashP float64
	}{
		{"same-instance", true, 0},
		{"new-instances-and-crashes", false, 0.2},
		{"same-instance-and-crashes", true, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{t: t, s: cfg(tc.name), client: c, rng: rand.New(rand.NewPCG(7, 7)),
				checkpointP: 0.5, crashP: tc.crashP, plain: true}
			if tc.shared {
				// One instance for every bundle, readied here: a crashed
				// bundle's outputs are dropped and its restriction redone, so
				// the encoder it suspended is ahead of the token and must not
				// be taken.
				r.shared = &finalizingWriteFilesFn{writeFilesFn: writeFilesFn{S: r.s.writerSettings}}
				r.shared.committer = r.committer(c)
				if err := r.shared.init(c); err != nil {
					t.Fatal(err)
				}
			}
			files := r.run(b)
			r.commitAll(files)
			objs := relative(t, c, bucket, tc.name)
			if len(objs) != 1 {
				t.Fatalf("%d files, want 1", len(objs))
			}
			// The footer's summary is the whole file's, however many
			// resumes and replays its encoder went through.
			if len(files) != 1 || len(refFiles) != 1 || len(files[0].Result.Footer.Columns) == 0 ||
				!reflect.DeepEqual(files[0].Result.Footer, refFiles[0].Result.Footer) {
				t.Errorf("the file's footer summary %+v differs from the uninterrupted run's %+v", files[0].Result.Footer, refFiles[0].Result.Footer)
			}
			if !bytes.Equal(objs[refKey], refObjs[refKey]) {
				t.Fatalf("%s differs from the uninterrupted run (%d bytes vs %d)", refKey, len(objs[refKey]), len(refObjs[refKey]))
			}
			if r.checkpoints < 10 {
				t.Errorf("%d checkpoints; the test wants many", r.checkpoints)
			}
			replays := r.counter("parquet_replays")
			switch {
			case tc.shared && tc.crashP == 0 && replays != 0:
				t.Errorf("%d replays; resumes in the same instance should go on with the suspended encoder", replays)
			case !tc.shared && replays < int64(r.checkpoints):
				t.Errorf("%d replays for %d checkpoints on new instances", replays, r.checkpoints)
			}
			t.Logf("%d bundles, %d checkpoints, %d crashes, %d replays", r.bundles, r.checkpoints, r.crashes, replays)
		})
	}
	sweep(t, c, bucket)
	checkClean(t, c, bucket)
}

// TestParquetPipeline runs Write with Format "parquet" on the embedded
// runner: the element type reaches the workers with the pipeline, and the
// files read back with the independent reader.
func TestParquetPipeline(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	events := pqEvents(600, 9)
	p, s := beam.NewPipelineWithRoot()
	cfg := testConfig(bucket, "pipe")
	cfg.Format = "parquet"
	cfg.Shards = 1
	cfg.Parquet.RowGroupRecords = 250
	collect(t, s, Write(s, beam.CreateList(s, events), cfg))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	objs := relative(t, c, bucket, "pipe")
	if len(objs) != 1 {
		t.Fatalf("%d files, want 1", len(objs))
	}
	for _, v := range objs {
		checkParquetFile(t, v, sortedEvents(t, events), 3, LatestOutputVersion)
	}
	// The footer's summary reaches the pipeline through the runner's
	// coders: its three row groups, and every column's records.
	res := results(t)
	if len(res) == 0 {
		t.Fatal("no FileResult")
	}
	for _, r := range res {
		f := r.Footer
		if len(f.RowGroupOffsets) != 3 || len(f.Columns) == 0 {
			t.Fatalf("%s: footer summary %+v; want 3 row groups and the columns", r.Key, f)
		}
		for _, c := range f.Columns {
			if c.Path[0] == "ID" && (c.Values != int64(len(events)) || !c.HasBounds) {
				t.Errorf("%s: column ID: %+v; want %d values, with bounds", r.Key, c, len(events))
			}
		}
	}
}
