package sink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/klauspost/compress/s2"
)

// unpackAll reads every record of packs, copied.
func unpackAll(packs [][]byte) ([][]byte, error) {
	u := unpacker{packs: sliceValues(packs)}
	var out [][]byte
	var rec []byte
	for u.next(&rec) {
		out = append(out, bytes.Clone(rec))
	}
	return out, u.failed()
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
		ts  beam.EventTime
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
		key := string(shardKey(rng.IntN(40), fmt.Sprint("d", rng.IntN(3))))
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
		in = append(in, rec{key: key, ts: mtime.FromMilliseconds(int64(1e6 - i + rng.IntN(50))), b: b})
	}
	var p packer
	got := map[string][][]byte{}
	at := map[string]beam.EventTime{} // each record's time
	for _, r := range in {
		at[r.key+"\x00"+string(r.b)] = r.ts
	}
	packs := 0
	emit := func(ts beam.EventTime, k, v []byte) {
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
		want := mtime.MaxTimestamp
		for _, r := range recs {
			want = min(want, at[string(k)+"\x00"+string(r)])
		}
		if ts != want {
			t.Fatalf("pack under %q at %v, want %v (its earliest record)", k, ts, want)
		}
		got[string(k)] = append(got[string(k)], recs...)
	}
	for i, r := range in {
		p.add([]byte(r.key), r.ts, r.b, emit)
		if p.held > packHeld {
			t.Fatalf("after record %d the open packs hold %d bytes, more than %d", i, p.held, packHeld)
		}
	}
	p.flush(emit)
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
	want := golden(t, "pack_v1.bin", goldenPack())
	got, err := unpackAll([][]byte{want})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, goldenPackRecords, bytes.Equal) {
		t.Fatalf("testdata/pack_v1.bin holds %q, want %q", got, goldenPackRecords)
	}
}

// compressiblePack is a version 1 pack of records that s2 compresses well,
// more than packCompressMin bytes of them: the records of
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
// 2): testdata/pack_v2.bin, as sealPack made it, reads back as its
// records. sealPack's bytes today need only read back the same: the s2
// encoder may choose other bytes for the same block in another release,
// and the reader reads them all.
func TestPackGoldenCompressed(t *testing.T) {
	raw, recs := compressiblePack()
	sealed := sealPack(raw)
	path := filepath.Join("testdata", "pack_v2.bin")
	if *update {
		if err := os.WriteFile(path, sealed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	for name, p := range map[string][]byte{"testdata/pack_v2.bin": want, "sealPack": sealed} {
		if len(p) == 0 || p[0] != packCompressed {
			t.Fatalf("%s does not start with version %d", name, packCompressed)
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
// packCompressMin and packCompressMax bytes and compress by an eighth or
// more; then it is smaller and reads back the same, beside version 1
// packs in one group.
func TestSealPack(t *testing.T) {
	raw, recs := compressiblePack()
	sealed := sealPack(raw)
	if sealed[0] != packCompressed || len(sealed) > len(raw)/2 {
		t.Fatalf("a pack of %d bytes of CSV rows sealed to version %d, %d bytes; want version %d and at most half", len(raw), sealed[0], len(sealed), packCompressed)
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
	big := newPack(packCompressMax)
	for len(big) <= packCompressMax+1 {
		big = appendRecord(big, bytes.Repeat([]byte("z"), 1000))
	}
	kept := map[string][]byte{
		"under packCompressMin": goldenPack(),
		"over packCompressMax":  big,
		"random records":        appendRecord(newPack(0), random),
	}
	for name, p := range kept {
		if out := sealPack(p); &out[0] != &p[0] || len(out) != len(p) {
			t.Errorf("%s: sealPack made a new pack of version %d, want the pack itself", name, out[0])
		}
	}
}

// TestUnpackRefuses checks that a malformed pack is an error wrapping
// errPack, and that Batch emits nothing for a group holding one.
func TestUnpackRefuses(t *testing.T) {
	good := goldenPack()
	raw, _ := compressiblePack()
	sealed := sealPack(raw)
	// A block that says it holds one byte more than a pack is ever
	// compressed with, and holds it.
	huge := append([]byte{packCompressed}, s2.Encode(nil, make([]byte, packCompressMax+1))...)
	cases := map[string][]byte{
		"empty value":                 {},
		"other version":               append([]byte{3}, good[1:]...),
		"compressed, block cut":       sealed[:len(sealed)-1],
		"compressed, not a block":     append([]byte{packCompressed}, good[1:]...),
		"compressed, nothing":         {packCompressed},
		"compressed, too large":       huge,
		"compressed, a record cut":    append([]byte{packCompressed}, s2.Encode(nil, good[1:len(good)-1])...),
		"compressed, length overflow": append([]byte{packCompressed}, s2.Encode(nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})...),
		"a record cut":                good[:len(good)-1],
		"a length cut":                good[:len(good)-len(goldenPackRecords[3])-1],
		"non-minimal length":          {packVersion, 0x81, 0x00, 'a'},
		"length overflow":             {packVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := unpackAll([][]byte{good, bad}); !errors.Is(err, errPack) {
				t.Fatalf("unpack: %v, want an error wrapping errPack", err)
			}
			fn := &batchFn{Shards: 4, MaxBatchBytes: MinMaxBatchBytes}
			emitted := 0
			err := fn.ProcessElement(t.Context(), beam.PaneInfo{}, window.GlobalWindow{}, shardKey(1, ""), sliceValues([][]byte{good, bad}), func(batch) { emitted++ })
			if !errors.Is(err, errPack) || emitted != 0 {
				t.Fatalf("Batch: %v and %d batches, want an error wrapping errPack and none", err, emitted)
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
	f.Add([]byte{packVersion})
	f.Add([]byte{packVersion, 0x80, 0x00})
	f.Add([]byte{packCompressed})
	f.Add(append([]byte{packCompressed}, s2.Encode(nil, goldenPack()[1:])...))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := unpackAll([][]byte{data})
		if err != nil {
			if !errors.Is(err, errPack) {
				t.Fatalf("error %v does not wrap errPack", err)
			}
			return
		}
		// What decodes is canonical: its records pack to the same bytes
		// (a compressed pack's: to the bytes its block holds; s2 may
		// write one block in several ways).
		body := data
		if data[0] == packCompressed {
			dec, err := s2.Decode(nil, data[1:])
			if err != nil {
				t.Fatalf("%x unpacks, but its block does not decode: %v", data, err)
			}
			body = append([]byte{packVersion}, dec...)
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

// TestPackable: Encode packs records only in the global window under the
// default trigger; other windows, and any trigger (which might count
// elements), keep one record per element.
func TestPackable(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []string{"a"})
	if !packable(col) {
		t.Error("global window, default trigger: not packed")
	}
	cases := map[string]beam.PCollection{
		"fixed":    beam.WindowInto(s, window.NewFixedWindows(time.Minute), col),
		"sliding":  beam.WindowInto(s, window.NewSlidingWindows(time.Minute, 3*time.Minute), col),
		"sessions": beam.WindowInto(s, window.NewSessions(time.Minute), col),
		"global, AfterCount": beam.WindowInto(s, window.NewGlobalWindows(), col,
			beam.Trigger(trigger.Repeat(trigger.AfterCount(50))), beam.PanesDiscard()),
		"global, AfterProcessingTime": beam.WindowInto(s, window.NewGlobalWindows(), col,
			beam.Trigger(trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(time.Minute))), beam.PanesDiscard()),
	}
	for name, c := range cases {
		if packable(c) {
			t.Errorf("%s: packed", name)
		}
	}
}
