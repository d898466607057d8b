package pack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/s3once/s3once/internal/testkit/golden"
)

// groupValues yields packs as a GroupByKey's iterator may: into one buffer
// that it reuses.
func groupValues(packs [][]byte) func(*[]byte) bool {
	var buf []byte
	return func(out *[]byte) bool {
		if len(packs) == 0 {
			return false
		}
		buf = append(buf[:0], packs[0]...)
		*out, packs = buf, packs[1:]
		return true
	}
}

// unpackAll reads every record of packs, copied.
func unpackAll(packs [][]byte) ([][]byte, error) {
	u := NewReader(groupValues(packs))
	var out [][]byte
	var rec []byte
	for u.Next(&rec) {
		out = append(out, bytes.Clone(rec))
	}
	return out, u.Err()
}

// TestPacker feeds a packer records of many sizes under many keys, as a
// bundle does, and checks that each record comes out once, under its key, in
// a pack that carries the earliest event time of its records; that no pack
// goes past packBytes by more than its last record; and that the open packs
// never hold more than packHeld.
func TestPacker(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type rec struct {
		key string
		ts  int64
		b   []byte
	}
	var in []rec
	empty := map[string]bool{}
	for i := range 20000 {
		var n int
		switch rng.IntN(1000) {
		case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9:
			n = 0 // an empty record
		case 10:
			n = packBytes + rng.IntN(1000) // larger than a pack
		default:
			n = rng.IntN(2000)
		}
		key := fmt.Sprintf("%d/d%d", rng.IntN(40), rng.IntN(3))
		// Every record is unique: its index, then random bytes; but for
		// one empty record per key.
		var b []byte
		if n > 0 || empty[key] {
			b = binary.AppendUvarint(make([]byte, 0, n+3), uint64(i))
			for range n {
				b = append(b, byte(rng.Uint32()))
			}
		}
		empty[key] = true
		in = append(in, rec{key: key, ts: int64(1e6 - i + rng.IntN(50)), b: b})
	}
	var p Packer[int64]
	got := map[string][][]byte{}
	at := map[string]int64{} // each record's time
	for _, r := range in {
		at[r.key+"\x00"+string(r.b)] = r.ts
	}
	packs := 0
	emit := func(ts int64, k, v []byte) {
		packs++
		recs, err := unpackAll([][]byte{v})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			t.Fatalf("an empty pack under %q", k)
		}
		if last := recs[len(recs)-1]; len(v)-len(last) > packBytes {
			t.Fatalf("a pack of %d bytes before its last record, more than %d", len(v)-len(last), packBytes)
		}
		// Each pack's time is the earliest of its records'.
		want := int64(math.MaxInt64)
		for _, r := range recs {
			want = min(want, at[string(k)+"\x00"+string(r)])
		}
		if ts != want {
			t.Fatalf("pack under %q at %v, want %v (its earliest record)", k, ts, want)
		}
		got[string(k)] = append(got[string(k)], recs...)
	}
	for i, r := range in {
		p.Add([]byte(r.key), r.ts, r.b, emit)
		if p.held > packHeld {
			t.Fatalf("after record %d the open packs hold %d bytes, more than %d", i, p.held, packHeld)
		}
	}
	p.Flush(emit)
	if len(p.open) != 0 || p.held != 0 {
		t.Fatalf("after the flush: %d open packs, %d bytes held", len(p.open), p.held)
	}
	want := map[string][][]byte{}
	for _, r := range in {
		want[r.key] = append(want[r.key], r.b)
	}
	for k, w := range want {
		g := got[k]
		slices.SortFunc(w, bytes.Compare)
		slices.SortFunc(g, bytes.Compare)
		if !slices.EqualFunc(g, w, bytes.Equal) {
			t.Fatalf("key %q: %d records came out, want %d (or other bytes)", k, len(g), len(w))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys came out, want %d", len(got), len(want))
	}
	if packs >= len(in)/10 {
		t.Fatalf("%d packs for %d records: packing did not pack", packs, len(in))
	}
}

// goldenPackRecords are the records of testdata/pack_v1.bin.
var goldenPackRecords = [][]byte{[]byte(""), []byte("a\n"), []byte("b,c\n"), bytes.Repeat([]byte("x"), 200)}

func goldenPack() []byte {
	p := newPack(0)
	for _, r := range goldenPackRecords {
		p = appendRecord(p, r)
	}
	return p
}

// TestPackGolden pins the pack encoding, version 1.
func TestPackGolden(t *testing.T) {
	want := golden.File(t, "pack_v1.bin", goldenPack())
	got, err := unpackAll([][]byte{want})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, goldenPackRecords, bytes.Equal) {
		t.Fatalf("testdata/pack_v1.bin holds %q, want %q", got, goldenPackRecords)
	}
}

// compressiblePack is a version 1 pack of records that s2 compresses well,
// more than compressMin bytes of them: the records of
// testdata/pack_v1.bin, then numbered CSV rows.
func compressiblePack() ([]byte, [][]byte) {
	recs := slices.Clone(goldenPackRecords)
	for i := range 200 {
		recs = append(recs, fmt.Appendf(nil, "%06d,user%04d,ok\n", i, i%50))
	}
	p := newPack(0)
	for _, r := range recs {
		p = appendRecord(p, r)
	}
	return p, recs
}

// TestPackGoldenCompressed pins the reading of a compressed pack (version
// 2): testdata/pack_v2.bin, as seal made it, reads back as its
// records. seal's bytes today need only read back the same: the s2
// encoder may choose other bytes for the same block in another release,
// and the reader reads them all.
func TestPackGoldenCompressed(t *testing.T) {
	raw, recs := compressiblePack()
	sealed := seal(raw)
	path := filepath.Join("testdata", "pack_v2.bin")
	if *golden.Update {
		if err := os.WriteFile(path, sealed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	for name, p := range map[string][]byte{"testdata/pack_v2.bin": want, "seal": sealed} {
		if len(p) == 0 || p[0] != compressed {
			t.Fatalf("%s does not start with version %d", name, compressed)
		}
		got, err := unpackAll([][]byte{p})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.EqualFunc(got, recs, bytes.Equal) {
			t.Fatalf("%s holds %d records, not the %d it was made of", name, len(got), len(recs))
		}
	}
}

// TestSealPack: a pack goes compressed only when its records are within
// compressMin and compressMax bytes and compress by an eighth or
// more; then it is smaller and reads back the same, beside version 1
// packs in one group.
func TestSealPack(t *testing.T) {
	raw, recs := compressiblePack()
	sealed := seal(raw)
	if sealed[0] != compressed || len(sealed) > len(raw)/2 {
		t.Fatalf("a pack of %d bytes of CSV rows sealed to version %d, %d bytes; want version %d and at most half", len(raw), sealed[0], len(sealed), compressed)
	}
	got, err := unpackAll([][]byte{goldenPack(), sealed, goldenPack()})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(goldenPackRecords, recs, goldenPackRecords)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("a group of version 1, 2 and 1 packs read back %d records, want %d", len(got), len(want))
	}

	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	big := newPack(compressMax)
	for len(big) <= compressMax+1 {
		big = appendRecord(big, bytes.Repeat([]byte("z"), 1000))
	}
	kept := map[string][]byte{
		"under compressMin": goldenPack(),
		"over compressMax":  big,
		"random records":    appendRecord(newPack(0), random),
	}
	for name, p := range kept {
		if out := seal(p); &out[0] != &p[0] || len(out) != len(p) {
			t.Errorf("%s: seal made a new pack of version %d, want the pack itself", name, out[0])
		}
	}
}

// TestUnpackRefuses checks that a malformed pack is an error wrapping
// ErrMalformed.
func TestUnpackRefuses(t *testing.T) {
	good := goldenPack()
	raw, _ := compressiblePack()
	sealed := seal(raw)
	// A block that says it holds one byte more than a pack is ever
	// compressed with, and holds it.
	huge := append([]byte{compressed}, s2.Encode(nil, make([]byte, compressMax+1))...)
	cases := map[string][]byte{
		"empty value":                 {},
		"other version":               append([]byte{3}, good[1:]...),
		"compressed, block cut":       sealed[:len(sealed)-1],
		"compressed, not a block":     append([]byte{compressed}, good[1:]...),
		"compressed, nothing":         {compressed},
		"compressed, too large":       huge,
		"compressed, a record cut":    append([]byte{compressed}, s2.Encode(nil, good[1:len(good)-1])...),
		"compressed, length overflow": append([]byte{compressed}, s2.Encode(nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})...),
		"a record cut":                good[:len(good)-1],
		"a length cut":                good[:len(good)-len(goldenPackRecords[3])-1],
		"non-minimal length":          {version, 0x81, 0x00, 'a'},
		"length overflow":             {version, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := unpackAll([][]byte{good, bad}); !errors.Is(err, ErrMalformed) {
				t.Fatalf("unpack: %v, want an error wrapping ErrMalformed", err)
			}
		})
	}
}

func FuzzUnpack(f *testing.F) {
	for _, name := range []string{"pack_v1.bin", "pack_v2.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{version})
	f.Add([]byte{version, 0x80, 0x00})
	f.Add([]byte{compressed})
	f.Add(append([]byte{compressed}, s2.Encode(nil, goldenPack()[1:])...))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := unpackAll([][]byte{data})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// What decodes is canonical: its records pack to the same bytes
		// (a compressed pack's: to the bytes its block holds; s2 may
		// write one block in several ways).
		body := data
		if data[0] == compressed {
			dec, err := s2.Decode(nil, data[1:])
			if err != nil {
				t.Fatalf("%x unpacks, but its block does not decode: %v", data, err)
			}
			body = append([]byte{version}, dec...)
		}
		p := newPack(0)
		for _, r := range recs {
			p = appendRecord(p, r)
		}
		if !bytes.Equal(p, body) {
			t.Fatalf("%x unpacks to %q, which packs to %x", data, recs, p)
		}
	})
}

// BenchmarkSealPack seals 1 MiB packs as Encode hands them over and reads
// them back as Batch does: records that compress (numbered CSV rows) and
// records that do not (random bytes, which seal leaves as they are after
// one attempt). Its bytes/s are the records'.
func BenchmarkSealPack(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 100)
	for _, shape := range []string{"csv", "random"} {
		b.Run("records="+shape, func(b *testing.B) {
			p := newPack(packBytes)
			for i := 0; len(p) < packBytes; i++ {
				rec := fmt.Appendf(nil, "%08d,user%05d,%s,ok\n", i, i%20000, "2026-12-05")
				if shape == "random" {
					for j := range random {
						random[j] = byte(rng.Uint32())
					}
					rec = random
				}
				p = appendRecord(p, rec)
			}
			b.SetBytes(int64(len(p) - 1))
			var sealed []byte
			for b.Loop() {
				sealed = seal(p)
				if _, err := RecordBytes(sealed); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(sealed))/float64(len(p)), "sealed/raw")
		})
	}
}
