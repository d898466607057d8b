package batchwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/internal/testkit/golden"
	"github.com/s3once/s3once/recoverable"
)

// codec has the sink's bounds.
var codec = Codec{MaxShards: 10000, MaxSubBatches: 64, MaxDestination: 256}

// testBatch is a batch as the tests compare it: its header and its
// records.
type testBatch struct {
	Header
	Lines [][]byte
}

func fixtureBatch() testBatch {
	return testBatch{Header{Destination: "country=fr", Window: "20240601T100000Z-20240601T100100Z", Pane: 2, Shard: 1, Shards: 3, SubBatches: 1},
		[][]byte{[]byte(""), []byte("a\n"), []byte("b,c\n"), bytes.Repeat([]byte("x"), 200)}}
}

// fixtureCompressedBatch is a batch Encode writes as version 4, with
// chunks of both kinds: a mebibyte of records that compress (one s2
// chunk), then records that do not (seeded random bytes, stored), and
// records that cross the boundary between them.
func fixtureCompressedBatch() testBatch {
	b := fixtureBatch()
	b.Lines = [][]byte{[]byte("")}
	for i := 0; ; i++ {
		if n, _ := sectionLen(b.Lines); n >= chunkBytes-100 {
			break
		}
		b.Lines = append(b.Lines, fmt.Appendf(nil, "event=click page=/home user=%03d\n", i%250))
	}
	rng := rand.New(rand.NewPCG(4, 2))
	for range 30 {
		l := make([]byte, 150)
		for j := range l {
			l[j] = byte(rng.Uint32())
		}
		b.Lines = append(b.Lines, l)
	}
	return b
}

// decodeWhole decodes data and splits its records.
func decodeWhole(data []byte) (testBatch, error) {
	h, r, err := codec.Decode(data)
	if err != nil {
		return testBatch{}, err
	}
	lines, err := r.Lines()
	if err != nil {
		return testBatch{}, err
	}
	return testBatch{h, lines}, nil
}

// chunkKinds returns the kinds of a version 4 encoding's chunks.
func chunkKinds(t *testing.T, enc []byte) []byte {
	t.Helper()
	_, r, err := codec.Decode(enc)
	if err != nil || r.chunks == nil {
		t.Fatalf("not a version 4 batch: %v", err)
	}
	fr := frame.NewReader("batch", r.chunks.chunks)
	var kinds []byte
	for fr.Remaining() > 0 {
		kinds = append(kinds, fr.U8("kind"))
		fr.Take("chunk", int(fr.Uvarint("length", uint64(fr.Remaining()))))
	}
	if err := fr.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}

func TestGolden(t *testing.T) {
	split := fixtureBatch()
	split.SubBatch, split.SubBatches = 5, 8
	for name, b := range map[string]testBatch{"batch_v3.bin": fixtureBatch(), "batch_v3_split.bin": split, "batch_v4.bin": fixtureCompressedBatch()} {
		t.Run(name, func(t *testing.T) {
			enc, err := codec.Encode(b.Header, b.Lines)
			if err != nil {
				t.Fatal(err)
			}
			if want := name[len("batch_v")] - '0'; enc[4] != want {
				t.Fatalf("encoded as version %d, want %d", enc[4], want)
			}
			if enc[4] == packed {
				if kinds := chunkKinds(t, enc); !bytes.Equal(kinds, []byte{chunkS2, chunkStored}) {
					t.Fatalf("chunks of kinds %v, want an s2 chunk and a stored one", kinds)
				}
				if plain, _ := codec.encode(b.Header, b.Lines, plain); len(enc) > len(plain)/4 {
					t.Fatalf("version 4 takes %d bytes, version 3 %d: the records did not compress", len(enc), len(plain))
				}
			}
			got, err := decodeWhole(golden.File(t, name, enc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, b) {
				t.Fatalf("decoded %+v, want %+v", got, b)
			}
		})
	}
}

// TestOldVersions decodes batches written by the versions before 3, which
// had a frame of their own: version 1, which had no sub-batches, as
// sub-batch 0 of 1, and version 2. Their files were written by those
// versions and never change; a batch they hold has no frame to go back as
// (Frame is nil), and re-encodes as version 3.
func TestOldVersions(t *testing.T) {
	split := fixtureBatch()
	split.SubBatch, split.SubBatches = 5, 8
	for name, want := range map[string]testBatch{"batch_v1.bin": fixtureBatch(), "batch_v2.bin": fixtureBatch(), "batch_v2_split.bin": split} {
		t.Run(name, func(t *testing.T) {
			data := golden.Read(t, name)
			h, r, err := codec.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if r.Frame() != nil {
				t.Fatalf("a batch of version %d keeps its frame", data[4])
			}
			got, err := decodeWhole(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || h != want.Header {
				t.Fatalf("decoded %+v, want %+v", got, want)
			}
			enc, err := codec.Encode(got.Header, got.Lines)
			if err != nil {
				t.Fatal(err)
			}
			if enc[4] != plain {
				t.Fatalf("re-encoded as version %d, want %d", enc[4], plain)
			}
		})
	}
}

// TestFrame checks that a batch is one frame of internal/frame, which a
// reader of frames takes apart without knowing batches.
func TestFrame(t *testing.T) {
	b := fixtureBatch()
	enc, err := codec.Encode(b.Header, b.Lines)
	if err != nil {
		t.Fatal(err)
	}
	v, p, err := frame.Framing{Magic: [4]byte{'S', '3', 'W', 'B'}, MaxPayload: frame.MaxLength}.Unframe(255, enc)
	if err != nil || v != plain || len(p) != len(enc)-frame.Overhead {
		t.Fatalf("Unframe: version %d, %d payload bytes, %v; want %d, %d", v, len(p), err, plain, len(enc)-frame.Overhead)
	}
	// The frame is written in place, in a buffer sized up front.
	if extra := cap(enc) - len(enc); extra > 128 {
		t.Errorf("a %d-byte encoding in a buffer of %d bytes", len(enc), cap(enc))
	}
	// The decoded records alias the encoding: nothing is copied.
	got, err := decodeWhole(enc)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Lines[len(got.Lines)-1]
	if &last[0] != &enc[len(enc)-4-len(last)] {
		t.Fatal("the decoded records do not alias the encoding")
	}
	// Version 4 is one frame too, and keeps no room for the records it
	// compressed away.
	c := fixtureCompressedBatch()
	enc, err = codec.Encode(c.Header, c.Lines)
	if err != nil {
		t.Fatal(err)
	}
	if v, p, err := batchFraming.Unframe(255, enc); err != nil || v != packed || len(p) != len(enc)-frame.Overhead {
		t.Fatalf("Unframe: version %d, %d payload bytes, %v; want %d, %d", v, len(p), err, packed, len(enc)-frame.Overhead)
	}
	if cap(enc) > 2*len(enc) {
		t.Errorf("a %d-byte encoding in a buffer of %d bytes", len(enc), cap(enc))
	}
}

// TestCompressedRejects: version 4's chunks and sizes are checked when the
// batch is decoded, and its records when they are decompressed; any damage
// is an error wrapping ErrMalformed, never other records.
func TestCompressedRejects(t *testing.T) {
	b := fixtureCompressedBatch()
	// A payload from its parts, framed with a good checksum, so that the
	// damage reaches the batch's own checks.
	reframe := func(edit func(head []byte, count, recBytes uint64, chunks []byte) []byte) []byte {
		t.Helper()
		enc, err := codec.Encode(b.Header, b.Lines)
		if err != nil {
			t.Fatal(err)
		}
		_, r, err := codec.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		_, payload, _ := batchFraming.Unframe(newest, enc)
		head := payload[:len(payload)-len(r.chunks.chunks)]
		// head ends with the count and the record bytes.
		head = head[:len(head)-frame.UvarintLen(uint64(r.count))-frame.UvarintLen(uint64(r.bytes))]
		out, _ := batchFraming.Begin(packed, 0)
		out = append(out, edit(bytes.Clone(head), uint64(r.count), uint64(r.bytes), bytes.Clone(r.chunks.chunks))...)
		out, err = batchFraming.End(out)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	join := func(head []byte, count, recBytes uint64, chunks []byte) []byte {
		return append(binary.AppendUvarint(binary.AppendUvarint(head, count), recBytes), chunks...)
	}
	if got, err := decodeWhole(reframe(join)); err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("the rebuilt encoding decodes to another batch (%v)", err)
	}
	cases := map[string]func(head []byte, count, recBytes uint64, chunks []byte) []byte{
		"one record more": func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c+1, n, ch) },
		"one record less": func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c-1, n, ch) },
		"a byte more":     func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c, n+1, ch) },
		"a byte less":     func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c, n-1, ch) },
		"no chunks":       func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c, n, nil) },
		"a chunk cut":     func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c, n, ch[:len(ch)-1]) },
		"a chunk lost":    func(h []byte, c, n uint64, ch []byte) []byte { return join(h, c, n, ch[:len(ch)-5000]) },
		"an unknown kind": func(h []byte, c, n uint64, ch []byte) []byte { ch[0] = 7; return join(h, c, n, ch) },
		"s2 read as stored": func(h []byte, c, n uint64, ch []byte) []byte {
			ch[0] = chunkStored
			return join(h, c, n, ch)
		},
		"a damaged s2 block": func(h []byte, c, n uint64, ch []byte) []byte {
			// The first chunk's block, past its decoded length, made of
			// tags that copy from before the start.
			size, k := binary.Uvarint(ch[1:])
			block := ch[1+k : 1+k+int(size)]
			_, m := binary.Uvarint(block)
			for i := m; i < len(block); i++ {
				block[i] = 0xff
			}
			return join(h, c, n, ch)
		},
		"an empty chunk": func(h []byte, c, n uint64, ch []byte) []byte {
			return join(h, c, n, append(ch, chunkStored, 0))
		},
		"a chunk too large": func(h []byte, c, n uint64, ch []byte) []byte {
			big := append([]byte{chunkStored}, binary.AppendUvarint(nil, chunkBytes+1)...)
			return join(h, c, n, append(append(ch, big...), make([]byte, chunkBytes+1)...))
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeWhole(reframe(edit))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("decode: %v, want ErrMalformed", err)
			}
		})
	}
}

// TestRejects: a batch with any byte flipped, or cut anywhere, is refused
// with an error wrapping ErrMalformed: a malformed batch, not an invalid
// token.
func TestRejects(t *testing.T) {
	b := fixtureBatch()
	good, err := codec.Encode(b.Header, b.Lines)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(data []byte) error {
		if _, r, err := codec.Decode(data); err != nil {
			return err
		} else if _, err := r.Lines(); err != nil {
			return err
		}
		return nil
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x01
		if err := refused(bad); !errors.Is(err, ErrMalformed) || errors.Is(err, recoverable.ErrInvalidToken) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := range good {
		if err := refused(good[:n]); !errors.Is(err, ErrMalformed) || errors.Is(err, recoverable.ErrInvalidToken) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	// The bounds: a header the sink would not write is not encoded, and
	// one past the codec's bounds is not decoded.
	for _, h := range []Header{
		{Window: "w", Shards: 0, SubBatches: 1},
		{Window: "w", Shard: 3, Shards: 3, SubBatches: 1},
		{Window: "w", Shards: 10001, SubBatches: 1},
		{Window: "w", Shards: 1, SubBatch: 1, SubBatches: 1},
		{Window: "w", Shards: 1, SubBatches: 65},
		{Window: "w", Shards: 1, SubBatches: 1, Pane: -1},
	} {
		if _, err := codec.Encode(h, nil); err == nil {
			t.Errorf("encoded a batch of header %+v", h)
		}
	}
	tight := codec
	tight.MaxShards, tight.MaxSubBatches = 2, 4
	tight.CheckDestination = func(d string) error { return fmt.Errorf("destination %q refused", d) }
	split := fixtureBatch()
	split.SubBatch, split.SubBatches = 5, 8
	for _, tb := range []testBatch{fixtureBatch(), split} {
		enc, err := codec.Encode(tb.Header, tb.Lines)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tight.Decode(enc); !errors.Is(err, ErrMalformed) {
			t.Errorf("a codec of tighter bounds decoded %+v: %v", tb.Header, err)
		}
	}
}

// checkRecords checks what Decode made of data against want: the count
// and bytes before the records are split, Frame is data itself (for
// versions 3 and 4), and the split records are want's.
func checkRecords(t *testing.T, data []byte, r *Records, want testBatch) {
	t.Helper()
	_, size := sectionLen(want.Lines)
	if r.Count() != int64(len(want.Lines)) || r.Bytes() != size {
		t.Fatalf("%x: records of %d records, %d bytes; want %d, %d", data, r.Count(), r.Bytes(), len(want.Lines), size)
	}
	if data[4] >= plain {
		if f := r.Frame(); !bytes.Equal(f, data) || &f[0] != &data[0] {
			t.Fatalf("%x: the records' frame is not the input", data)
		}
	} else if r.Frame() != nil {
		t.Fatalf("%x: a batch of version %d keeps a frame", data, data[4])
	}
	lines, err := r.Lines()
	if err != nil {
		t.Fatalf("%x: Lines: %v", data, err)
	}
	if !reflect.DeepEqual(lines, want.Lines) {
		t.Fatalf("%x: records %q, want %q", data, lines, want.Lines)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"batch_v1.bin", "batch_v2.bin", "batch_v2_split.bin", "batch_v3.bin", "batch_v3_split.bin", "batch_v4.bin"} {
		f.Add(golden.Read(f, name))
	}
	fb := fixtureBatch()
	if small, err := codec.encode(fb.Header, fb.Lines, packed); err == nil {
		f.Add(small) // version 4 at a size a fuzzer mutates quickly
	}
	f.Add([]byte{})
	f.Add([]byte("S3WB\x01"))
	f.Add([]byte("S3WB\x02"))
	f.Add([]byte("S3WB\x03\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, r, err := codec.Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		lines, err := r.Lines()
		if err != nil {
			// Only version 4 checks its records late: when they are
			// decompressed, before the writer uses them.
			if data[4] != packed || !errors.Is(err, ErrMalformed) {
				t.Fatalf("%x: Decode accepts it, Lines says %v", data, err)
			}
			return
		}
		b := testBatch{h, lines}
		checkRecords(t, data, r, b)
		enc, err := codec.Encode(h, lines)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if data[4] == enc[4] && data[4] == plain {
			if !bytes.Equal(enc, data) {
				t.Fatalf("%x decodes to a batch that encodes to %x", data, enc)
			}
			return
		}
		// Another version, or chunks cut otherwise than Encode cuts them,
		// re-encodes to the same batch.
		again, err := decodeWhole(enc)
		if err != nil || !reflect.DeepEqual(again, b) {
			t.Fatalf("%x decodes to %+v, which re-encodes and decodes to %+v (%v)", data, b, again, err)
		}
	})
}

// TestRecordsHeld: Decode allocates nothing per record: the records are
// checked and stay encoded until Lines splits them, and Frame gives back
// the bytes they came in.
func TestRecordsHeld(t *testing.T) {
	const records = 20_000
	b := testBatch{Header: Header{Destination: "d", Window: "global", Shards: 1, SubBatches: 1}}
	for i := range records {
		b.Lines = append(b.Lines, fmt.Appendf(nil, "record %06d\n", i))
	}
	enc, err := codec.Encode(b.Header, b.Lines)
	if err != nil {
		t.Fatal(err)
	}
	plainEnc, err := codec.encode(b.Header, b.Lines, plain)
	if err != nil {
		t.Fatal(err)
	}
	fixtures := map[string]testBatch{"batch_v1.bin": fixtureBatch(), "batch_v2.bin": fixtureBatch(), "batch_v3.bin": fixtureBatch(), "batch_v4.bin": fixtureCompressedBatch()}
	for name, want := range fixtures {
		data := golden.Read(t, name)
		_, r, err := codec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, data, r, want)
	}
	for _, data := range [][]byte{enc, plainEnc} {
		_, r, err := codec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, data, r, b)
		// Allocation: splitting makes a slice header per record; Decode
		// a few fixed objects.
		allocated := func(f func()) uint64 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 10 {
				f()
			}
			runtime.ReadMemStats(&after)
			return (after.TotalAlloc - before.TotalAlloc) / 10
		}
		wholeBytes := allocated(func() {
			if _, err := decodeWhole(data); err != nil {
				t.Fatal(err)
			}
		})
		heldBytes := allocated(func() {
			if _, _, err := codec.Decode(data); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("version %d: allocated per decode of %d records: %d bytes whole, %d held", data[4], records, wholeBytes, heldBytes)
		if wholeBytes < records*24 {
			t.Fatalf("version %d: a whole decode allocated %d bytes, less than the %d of its slice headers: the measure is broken", data[4], wholeBytes, records*24)
		}
		if heldBytes > wholeBytes/20 {
			t.Fatalf("version %d: Decode of %d records allocated %d bytes (a whole decode %d): it should allocate nothing per record", data[4], records, heldBytes, wholeBytes)
		}
	}
}

// BenchmarkCodec prices what a batch costs to cross to the writer: the
// encoding Batch hands the runner and the writer's decoding of it (held,
// then its records), for a 16 MiB batch of records that compress and of
// records that do not, as version 3 (plain) and version 4 (compressed, what
// Encode writes). encoded/raw is the encoding's size over version 3's.
func BenchmarkCodec(b *testing.B) {
	for name, rec := range benchRecordShapes(7) {
		bt := testBatch{Header: Header{Destination: "d", Window: "global", Shards: 1, SubBatches: 1}}
		for i := 0; ; i++ {
			if n, _ := sectionLen(bt.Lines); n >= 16<<20 {
				break
			}
			bt.Lines = append(bt.Lines, rec(i))
		}
		plainEnc, err := codec.encode(bt.Header, bt.Lines, plain)
		if err != nil {
			b.Fatal(err)
		}
		_, size := sectionLen(bt.Lines)
		for _, version := range []byte{plain, packed} {
			b.Run(fmt.Sprintf("%s/version=%d", name, version), func(b *testing.B) {
				b.SetBytes(size)
				var enc []byte
				for b.Loop() {
					if enc, err = codec.encode(bt.Header, bt.Lines, version); err != nil {
						b.Fatal(err)
					}
					if got, err := decodeWhole(enc); err != nil || len(got.Lines) != len(bt.Lines) {
						b.Fatalf("%d records (%v), want %d", len(got.Lines), err, len(bt.Lines))
					}
				}
				b.ReportMetric(float64(len(enc))/float64(len(plainEnc)), "encoded/raw")
			})
		}
	}
}

// benchRecordShapes makes the i-th record of two shapes: numbered CSV rows,
// which compress, and 100 random bytes from a generator seeded with seed,
// which do not.
func benchRecordShapes(seed uint64) map[string]func(i int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	return map[string]func(i int) []byte{
		"records=csv": func(i int) []byte { return fmt.Appendf(nil, "%08d,user%05d,%s,ok\n", i, i%20000, "2026-12-05") },
		"records=random": func(int) []byte {
			r := make([]byte, 100)
			for j := range r {
				r[j] = byte(rng.Uint32())
			}
			return r
		},
	}
}
