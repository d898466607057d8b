package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/internal/testkit/golden"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

// fixtureToken is a resume token as a writer makes one: one full part and an
// inline tail.
func fixtureToken(t testing.TB) []byte {
	t.Helper()
	rr := recoverable.ResumeToken{
		Bucket: "bucket", Key: "out/d/global-pane-0-shard-00001-of-00003-file-00002.txt.gz",
		UploadID: "upload-1", PartSize: 5 << 20, StagingPrefix: ".s3once/staging/", Seq: 3,
		Parts: recoverable.Chain([]recoverable.Part{{Number: 1, Size: 5 << 20, ETag: `"0123456789abcdef"`, CRC: 0x1234}}),
		Tail:  recoverable.Tail{Len: 5, CRC: crc64nvme.Checksum([]byte("hello")), Inline: []byte("hello")},
	}
	b, err := coder.EncodeResumeToken(rr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureBatch() batch {
	return batch{Destination: "country=fr", Window: "20240601T100000Z-20240601T100100Z", Pane: 2, Shard: 1, Shards: 3, SubBatches: 1,
		Lines: [][]byte{[]byte(""), []byte("a\n"), []byte("b,c\n"), bytes.Repeat([]byte("x"), 200)}}
}

// fixtureCompressedBatch is a batch encodeBatch writes as version 4, with
// chunks of both kinds: a mebibyte of records that compress (one s2
// chunk), then records that do not (seeded random bytes, stored), and
// records that cross the boundary between them.
func fixtureCompressedBatch() batch {
	b := fixtureBatch()
	b.Lines = [][]byte{[]byte("")}
	for i := 0; recordsSectionLen(b.Lines) < batchChunkBytes-100; i++ {
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

// batchChunkKinds returns the kinds of a version 4 encoding's chunks.
func batchChunkKinds(t *testing.T, enc []byte) []byte {
	t.Helper()
	held, err := decodeHeldBatch(enc)
	if err != nil || held.encoded == nil || held.encoded.packed == nil {
		t.Fatalf("not a version 4 batch: %v", err)
	}
	r := frame.NewReader("batch", held.encoded.packed.chunks)
	var kinds []byte
	for r.Remaining() > 0 {
		kinds = append(kinds, r.U8("kind"))
		r.Take("chunk", int(r.Uvarint("length", uint64(r.Remaining()))))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}

func TestRestrictionGolden(t *testing.T) {
	cases := map[string]restriction{
		"restriction_v1_fresh.bin":     {Start: 0, End: 1500, FileIndex: 0},
		"restriction_v1_next_file.bin": {Start: 700, End: 1500, FileIndex: 3},
		"restriction_v1_token.bin": {Start: 812, End: 1500, FileIndex: 2, FileRecords: 95, FileBytes: 5<<20 + 5,
			Token: fixtureToken(t)},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			enc, err := encodeRestriction(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRestriction(golden.File(t, name, enc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("decoded %+v, want %+v", got, r)
			}
		})
	}
}

func TestBatchGolden(t *testing.T) {
	split := fixtureBatch()
	split.SubBatch, split.SubBatches = 5, 8
	for name, b := range map[string]batch{"batch_v3.bin": fixtureBatch(), "batch_v3_split.bin": split, "batch_v4.bin": fixtureCompressedBatch()} {
		t.Run(name, func(t *testing.T) {
			enc, err := encodeBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			if want := name[len("batch_v")] - '0'; enc[4] != want {
				t.Fatalf("encoded as version %d, want %d", enc[4], want)
			}
			if enc[4] == batchCompressed {
				if kinds := batchChunkKinds(t, enc); !bytes.Equal(kinds, []byte{chunkS2, chunkStored}) {
					t.Fatalf("chunks of kinds %v, want an s2 chunk and a stored one", kinds)
				}
				if plain, _ := encodeBatchVersion(b, batchPlain); len(enc) > len(plain)/4 {
					t.Fatalf("version 4 takes %d bytes, version 3 %d: the records did not compress", len(enc), len(plain))
				}
			}
			got, err := decodeBatch(golden.File(t, name, enc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, b) {
				t.Fatalf("decoded %+v, want %+v", got, b)
			}
		})
	}
}

// TestBatchOldVersions decodes batches written by the versions before 3,
// which had a frame of their own: version 1, which had no sub-batches, as
// sub-batch 0 of 1, and version 2. Their files were written by those
// versions and never change; a batch they hold re-encodes as version 3.
func TestBatchOldVersions(t *testing.T) {
	split := fixtureBatch()
	split.SubBatch, split.SubBatches = 5, 8
	for name, want := range map[string]batch{"batch_v1.bin": fixtureBatch(), "batch_v2.bin": fixtureBatch(), "batch_v2_split.bin": split} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeBatch(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %+v, want %+v", got, want)
			}
			enc, err := encodeBatch(got)
			if err != nil {
				t.Fatal(err)
			}
			if enc[4] != batchPlain {
				t.Fatalf("re-encoded as version %d, want %d", enc[4], batchPlain)
			}
		})
	}
}

// TestBatchFrame checks that a batch is one frame of the coder package,
// which a reader of frames takes apart without knowing batches.
func TestBatchFrame(t *testing.T) {
	enc, err := encodeBatch(fixtureBatch())
	if err != nil {
		t.Fatal(err)
	}
	v, p, err := frame.Framing{Magic: [4]byte{'S', '3', 'W', 'B'}, MaxPayload: frame.MaxLength}.Unframe(255, enc)
	if err != nil || v != batchPlain || len(p) != len(enc)-frame.Overhead {
		t.Fatalf("Unframe: version %d, %d payload bytes, %v; want %d, %d", v, len(p), err, batchPlain, len(enc)-frame.Overhead)
	}
	// The frame is written in place, in a buffer sized up front.
	if extra := cap(enc) - len(enc); extra > 128 {
		t.Errorf("a %d-byte encoding in a buffer of %d bytes", len(enc), cap(enc))
	}
	// The decoded records alias the encoding: nothing is copied.
	b, err := decodeBatch(enc)
	if err != nil {
		t.Fatal(err)
	}
	last := b.Lines[len(b.Lines)-1]
	if &last[0] != &enc[len(enc)-4-len(last)] {
		t.Fatal("the decoded records do not alias the encoding")
	}
	// Version 4 is one frame too, and keeps no room for the records it
	// compressed away.
	enc, err = encodeBatch(fixtureCompressedBatch())
	if err != nil {
		t.Fatal(err)
	}
	if v, p, err := batchFraming.Unframe(255, enc); err != nil || v != batchCompressed || len(p) != len(enc)-frame.Overhead {
		t.Fatalf("Unframe: version %d, %d payload bytes, %v; want %d, %d", v, len(p), err, batchCompressed, len(enc)-frame.Overhead)
	}
	if cap(enc) > 2*len(enc) {
		t.Errorf("a %d-byte encoding in a buffer of %d bytes", len(enc), cap(enc))
	}
}

// TestCompressedBatchRejects: version 4's chunks and sizes are checked when
// the batch is decoded, and its records when they are decompressed; any
// damage is an error wrapping errBatchEncoding, never other records.
func TestCompressedBatchRejects(t *testing.T) {
	b := fixtureCompressedBatch()
	// A payload from its parts, framed with a good checksum, so that the
	// damage reaches the batch's own checks.
	reframe := func(edit func(head []byte, count, recBytes uint64, chunks []byte) []byte) []byte {
		t.Helper()
		enc, err := encodeBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		held, err := decodeHeldBatch(enc)
		if err != nil {
			t.Fatal(err)
		}
		e := held.encoded
		_, payload, _ := batchFraming.Unframe(batchVersion, enc)
		head := payload[:len(payload)-len(e.packed.chunks)]
		// head ends with the count and the record bytes.
		head = head[:len(head)-frame.UvarintLen(uint64(e.count))-frame.UvarintLen(uint64(e.bytes))]
		out, _ := batchFraming.Begin(batchCompressed, 0)
		out = append(out, edit(bytes.Clone(head), uint64(e.count), uint64(e.bytes), bytes.Clone(e.packed.chunks))...)
		out, err = batchFraming.End(out)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	join := func(head []byte, count, recBytes uint64, chunks []byte) []byte {
		return append(binary.AppendUvarint(binary.AppendUvarint(head, count), recBytes), chunks...)
	}
	if got, err := decodeBatch(reframe(join)); err != nil || !reflect.DeepEqual(got, b) {
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
			big := append([]byte{chunkStored}, binary.AppendUvarint(nil, batchChunkBytes+1)...)
			return join(h, c, n, append(append(ch, big...), make([]byte, batchChunkBytes+1)...))
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			data := reframe(edit)
			_, err := decodeBatch(data)
			if !errors.Is(err, errBatchEncoding) {
				t.Fatalf("decodeBatch: %v, want errBatchEncoding", err)
			}
			held, heldErr := decodeHeldBatch(data)
			if heldErr == nil {
				// Damage inside the records shows when they are
				// decompressed, before the writer writes any.
				heldErr = held.decodeRecords()
			}
			if !errors.Is(heldErr, errBatchEncoding) {
				t.Fatalf("held: %v, want errBatchEncoding", heldErr)
			}
		})
	}
}

func TestRestrictionRejects(t *testing.T) {
	good, err := encodeRestriction(restriction{Start: 3, End: 9, FileIndex: 1, FileRecords: 2, FileBytes: 10, Token: fixtureToken(t)})
	if err != nil {
		t.Fatal(err)
	}
	// A damaged restriction is reported as one, not as an invalid token.
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := decodeRestriction(bad); !errors.Is(err, errRestrictionEncoding) || errors.Is(err, recoverable.ErrInvalidToken) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := range good {
		if _, err := decodeRestriction(good[:n]); !errors.Is(err, errRestrictionEncoding) || errors.Is(err, recoverable.ErrInvalidToken) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	for _, r := range []restriction{
		{Start: 5, End: 4},
		{Start: 0, End: 4, FileRecords: 1},
		{Start: 0, End: 4, Token: []byte("x")},
		{Start: 0, End: 4, FileIndex: -1},
	} {
		if _, err := encodeRestriction(r); err == nil {
			t.Errorf("encodeRestriction(%v) accepted an impossible restriction", r)
		}
	}
}

func TestBatchRejects(t *testing.T) {
	good, err := encodeBatch(fixtureBatch())
	if err != nil {
		t.Fatal(err)
	}
	// A damaged batch is reported as one, not as an invalid token.
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x01
		for _, decode := range []func([]byte) (batch, error){decodeBatch, decodeHeldBatch} {
			if _, err := decode(bad); !errors.Is(err, errBatchEncoding) || errors.Is(err, recoverable.ErrInvalidToken) {
				t.Fatalf("flipping byte %d: %v", i, err)
			}
		}
	}
	for n := range good {
		for _, decode := range []func([]byte) (batch, error){decodeBatch, decodeHeldBatch} {
			if _, err := decode(good[:n]); !errors.Is(err, errBatchEncoding) || errors.Is(err, recoverable.ErrInvalidToken) {
				t.Fatalf("cut at %d: %v", n, err)
			}
		}
	}
}

func FuzzDecodeRestriction(f *testing.F) {
	for _, name := range []string{"restriction_v1_fresh.bin", "restriction_v1_next_file.bin", "restriction_v1_token.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("S3WR"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRestriction(data)
		if err != nil {
			if !errors.Is(err, errRestrictionEncoding) {
				t.Fatalf("error %v does not wrap errRestrictionEncoding", err)
			}
			return
		}
		// What decodes is valid and canonical.
		if err := r.validate(); err != nil {
			t.Fatalf("decoded an invalid restriction %v: %v", r, err)
		}
		enc, err := encodeRestriction(r)
		if err != nil {
			t.Fatalf("re-encode %v: %v", r, err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("%x decodes to %v, which encodes to %x", data, r, enc)
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	for _, name := range []string{"batch_v1.bin", "batch_v2.bin", "batch_v2_split.bin", "batch_v3.bin", "batch_v3_split.bin", "batch_v4.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	if small, err := encodeBatchVersion(fixtureBatch(), batchCompressed); err == nil {
		f.Add(small) // version 4 at a size a fuzzer mutates quickly
	}
	f.Add([]byte{})
	f.Add([]byte("S3WB\x01"))
	f.Add([]byte("S3WB\x02"))
	f.Add([]byte("S3WB\x03\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data)
		held, heldErr := decodeHeldBatch(data)
		if err != nil && heldErr == nil {
			// Only version 4 checks its records late: when they are
			// decompressed, before the writer uses them.
			if data[4] != batchCompressed {
				t.Fatalf("%x: decodeBatch says %v, decodeHeldBatch accepts it", data, err)
			}
			heldErr = held.decodeRecords()
			if heldErr == nil {
				t.Fatalf("%x: decodeBatch says %v, a held batch decodes its records", data, err)
			}
		}
		if (err == nil) != (heldErr == nil) {
			t.Fatalf("%x: decodeBatch says %v, decodeHeldBatch %v", data, err, heldErr)
		}
		if err != nil {
			if !errors.Is(err, errBatchEncoding) || !errors.Is(heldErr, errBatchEncoding) {
				t.Fatalf("errors %v and %v do not wrap errBatchEncoding", err, heldErr)
			}
			return
		}
		checkHeldBatch(t, data, held, b)
		enc, err := encodeBatch(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if data[4] == enc[4] && data[4] == batchPlain {
			if !bytes.Equal(enc, data) {
				t.Fatalf("%x decodes to a batch that encodes to %x", data, enc)
			}
			return
		}
		// Another version, or chunks cut otherwise than encodeBatch cuts
		// them, re-encodes to the same batch.
		again, err := decodeBatch(enc)
		if err != nil || !reflect.DeepEqual(again, b) {
			t.Fatalf("%x decodes to %+v, which re-encodes and decodes to %+v (%v)", data, b, again, err)
		}
	})
}

// TestRestrictionTokenDecodedOnce: the restriction's coder carries the token
// as the writer made it, without decoding it (the runner encodes and decodes
// restrictions many times), and the writer decodes it once, when it resumes
// the file: a token that is not one is refused there, naming the file, as
// recoverable.ErrInvalidToken, before any S3 call.
func TestRestrictionTokenDecodedOnce(t *testing.T) {
	b := batch{Window: "global", Shard: 0, Shards: 1, SubBatches: 1, Lines: [][]byte{[]byte("a\n"), []byte("b\n"), []byte("c\n")}}
	rest := restriction{Start: 1, End: 3, FileRecords: 1, FileBytes: 2, Token: []byte("not a resume token")}
	got := roundTrip(t, rest, encodeRestriction, decodeRestriction)
	if !reflect.DeepEqual(got, rest) {
		t.Fatalf("decoded %+v, want %+v", got, rest)
	}

	fake := s3mem.New(s3mem.Options{})
	bucket := fake.Bucket()
	client := fake.NewClient(s3mem.ClientOptions{})
	st, err := Config{Bucket: bucket, Prefix: "out"}.settings()
	if err != nil {
		t.Fatal(err)
	}
	fn := &writeFilesFn{S: st.forWriter()}
	if err := fn.init(client); err != nil {
		t.Fatal(err)
	}
	calls := len(fake.Calls())
	_, err = fn.ProcessElement(context.Background(), fn.CreateTracker(got), b, func(pendingFile) { t.Error("a file was emitted") })
	key := fileKey(fn.S, fn.ext, &b, 0)
	if !errors.Is(err, recoverable.ErrInvalidToken) || !strings.Contains(err.Error(), key) {
		t.Fatalf("resuming from a bad token: %v; want ErrInvalidToken naming %s", err, key)
	}
	if n := len(fake.Calls()) - calls; n != 0 {
		t.Errorf("%d S3 calls made for a bad token", n)
	}
}

// checkHeldBatch checks a batch decodeHeldBatch made of data against the
// one decodeBatch made: the same count and bytes before its records are
// decoded, the same batch after, and, until then, encodeBatch gives back
// data itself.
func checkHeldBatch(t *testing.T, data []byte, held, want batch) {
	t.Helper()
	if n, size := held.size(); n != int64(len(want.Lines)) || size != recordBytes(want.Lines) {
		t.Fatalf("%x: held batch of %d records, %d bytes; want %d, %d", data, n, size, len(want.Lines), recordBytes(want.Lines))
	}
	if held.encoded != nil {
		enc, err := encodeBatch(held)
		if err != nil || !bytes.Equal(enc, data) || &enc[0] != &data[0] {
			t.Fatalf("%x: a held batch re-encodes to %x (%v), not to its own bytes", data, enc, err)
		}
	} else if data[4] >= batchPlain {
		t.Fatalf("%x: a batch of version %d was decoded whole", data, data[4])
	}
	if err := held.decodeRecords(); err != nil {
		t.Fatalf("%x: decodeRecords: %v", data, err)
	}
	if held.encoded != nil {
		// The records alias the runner's bytes: the writer keeps them.
		held.dropOwnEncoding()
		if enc, err := encodeBatch(held); err != nil || &enc[0] != &data[0] {
			t.Fatalf("%x: a held batch dropped the runner's bytes it aliases (%v)", data, err)
		}
	}
	held.encoded = nil
	if !reflect.DeepEqual(held, want) {
		t.Fatalf("%x: held batch decodes to %+v, want %+v", data, held, want)
	}
}

// TestHeldBatch: the writer's batch reaches it from the runner's bytes
// before it can reserve memory. Decoding it (decodeHeldBatch) allocates
// nothing per record: the records are checked and stay encoded until the
// writer, having reserved, decodes them; a batch the writer gives back
// re-encodes as the bytes it came in.
func TestHeldBatch(t *testing.T) {
	const records = 20_000
	b := batch{Destination: "d", Window: "global", Shards: 1, SubBatches: 1}
	for i := range records {
		b.Lines = append(b.Lines, fmt.Appendf(nil, "record %06d\n", i))
	}
	enc, err := encodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	compareHeld := func(data []byte) {
		t.Helper()
		want, err := decodeBatch(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeHeldBatch(data)
		if err != nil {
			t.Fatal(err)
		}
		checkHeldBatch(t, data, got, want)
	}
	compareHeld(enc)
	plain, err := encodeBatchVersion(b, batchPlain)
	if err != nil {
		t.Fatal(err)
	}
	compareHeld(plain)
	for _, name := range []string{"batch_v1.bin", "batch_v2.bin", "batch_v2_split.bin", "batch_v3.bin", "batch_v3_split.bin", "batch_v4.bin"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		compareHeld(data)
	}
	// Allocation: a whole decode makes a slice header per record; a held
	// one a few fixed objects.
	for _, enc := range [][]byte{enc, plain} {
		allocated := func(decode func([]byte) (batch, error)) uint64 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 10 {
				if _, err := decode(enc); err != nil {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			return (after.TotalAlloc - before.TotalAlloc) / 10
		}
		wholeBytes, heldBytes := allocated(decodeBatch), allocated(decodeHeldBatch)
		t.Logf("version %d: allocated per decode of %d records: %d bytes whole, %d held", enc[4], records, wholeBytes, heldBytes)
		if wholeBytes < records*24 {
			t.Fatalf("version %d: a whole decode allocated %d bytes, less than the %d of its slice headers: the measure is broken", enc[4], wholeBytes, records*24)
		}
		if heldBytes > wholeBytes/20 {
			t.Fatalf("version %d: a held decode of %d records allocated %d bytes (a whole one %d): it should allocate nothing per record", enc[4], records, heldBytes, wholeBytes)
		}
	}
}

// TestEmittedBatchEncodedOnce: the SDK encodes a batch Batch emits to hand
// it over, and again to sample its size in each PCollection it passes
// through in the stage; the copies it makes share one encoding, made
// once, the same bytes encodeBatch makes of the records. So does every
// sub-batch of a spilled group. Once the stage has taken the batch, the
// copies the SDK keeps hold neither its records nor its encoding, and
// using one is an error, never an empty batch.
func TestEmittedBatchEncodedOnce(t *testing.T) {
	var recs [][]byte
	for i := range 3000 {
		recs = append(recs, fmt.Appendf(nil, "%05d some record\n", (i*7919)%3000))
	}
	for _, limit := range []int64{1 << 20, 16 << 10} { // whole, then spilled into sub-batches
		head := batch{Destination: "d", Window: "global", Shard: 1, Shards: 2, SubBatches: 1}
		var got []batch
		if err := gatherBatches(head, limit, sliceValues(recs), nil, func(b batch) { got = append(got, b) }); err != nil {
			t.Fatal(err)
		}
		if limit < 1<<20 && len(got) < 2 {
			t.Fatalf("limit %d: %d batches, want sub-batches", limit, len(got))
		}
		for _, b := range got {
			want, err := encodeBatchRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			var held batch // a copy, as the SDK's invokers keep it
			passed := false
			stage := elementFunc(func(fv *exec.FullValue) error {
				held = fv.Elm.(batch)
				if held.encoded == nil || held.Lines != nil {
					t.Fatalf("limit %d: sub-batch %d was emitted without its records in a shared memo", limit, b.SubBatch)
				}
				if count, size := held.size(); count != int64(len(b.Lines)) || size != recordBytes(b.Lines) {
					t.Fatalf("limit %d: sub-batch %d: size %d records, %d bytes, want %d, %d", limit, b.SubBatch, count, size, len(b.Lines), recordBytes(b.Lines))
				}
				first, err := encodeBatch(held)
				if err != nil {
					t.Fatal(err)
				}
				again := held
				second, err := encodeBatch(again)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(first, want) || &first[0] != &second[0] {
					t.Fatalf("limit %d: sub-batch %d encodes to %d bytes, then to another copy (want one encoding of %d bytes)", limit, b.SubBatch, len(first), len(want))
				}
				if n := testing.AllocsPerRun(10, func() { _, _ = encodeBatch(again) }); n != 0 {
					t.Fatalf("limit %d: encoding an encoded batch again allocates %v times", limit, n)
				}
				// A writer fused with Batch lets go of the memo's encoding
				// once it holds the records; an encoding after that (a
				// residual) is made anew, the same bytes.
				w := held
				if err := w.decodeRecords(); err != nil || len(w.Lines) != len(b.Lines) {
					t.Fatalf("limit %d: sub-batch %d: the writer got %d records (%v), want %d", limit, b.SubBatch, len(w.Lines), err, len(b.Lines))
				}
				w.dropOwnEncoding()
				if held.encoded.frame != nil {
					t.Fatalf("limit %d: sub-batch %d keeps its encoding after the writer dropped it", limit, b.SubBatch)
				}
				third, err := encodeBatch(held)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(third, want) || &third[0] == &first[0] {
					t.Fatalf("limit %d: sub-batch %d re-encodes after the drop to %d bytes (want a new encoding of %d bytes)", limit, b.SubBatch, len(third), len(want))
				}
				passed = true
				return nil
			})
			em := newBatchEmitter(stage).(*batchEmitter)
			if err := em.Init(context.Background(), typex.NoFiringPane(), window.SingleGlobalWindow, mtime.ZeroTimestamp); err != nil {
				t.Fatal(err)
			}
			em.invoke(b)
			if !passed {
				t.Fatalf("limit %d: sub-batch %d never reached the stage", limit, b.SubBatch)
			}
			// Handed over: the kept copy holds nothing and says so.
			if held.encoded.lines != nil || held.encoded.frame != nil {
				t.Fatalf("limit %d: sub-batch %d: the copy the SDK keeps still holds the records or their encoding", limit, b.SubBatch)
			}
			if _, err := encodeBatch(held); !errors.Is(err, errBatchSpent) {
				t.Fatalf("limit %d: encoding a batch after it was handed over: %v, want errBatchSpent", limit, err)
			}
			if err := held.decodeRecords(); !errors.Is(err, errBatchSpent) {
				t.Fatalf("limit %d: reading a batch's records after it was handed over: %v, want errBatchSpent", limit, err)
			}
			if len(b.Lines) == 0 {
				t.Fatalf("limit %d: the gathered batch lost its records", limit)
			}
		}
	}
}

// elementFunc is an exec.ElementProcessor that calls itself.
type elementFunc func(*exec.FullValue) error

func (f elementFunc) ProcessElement(_ context.Context, fv *exec.FullValue, _ ...exec.ReStream) error {
	return f(fv)
}
