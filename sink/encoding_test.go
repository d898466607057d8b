package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/batchwire"
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
	fn := &writeFilesFn{S: st.writerSettings}
	if err := fn.init(client); err != nil {
		t.Fatal(err)
	}
	calls := len(fake.Calls())
	_, err = fn.ProcessElement(context.Background(), fn.CreateTracker(got), b, func(pendingFile) { t.Error("a file was emitted") })
	key := fileKey(fn.S.folder, fn.ext, &b, 0)
	if !errors.Is(err, recoverable.ErrInvalidToken) || !strings.Contains(err.Error(), key) {
		t.Fatalf("resuming from a bad token: %v; want ErrInvalidToken naming %s", err, key)
	}
	if n := len(fake.Calls()) - calls; n != 0 {
		t.Errorf("%d S3 calls made for a bad token", n)
	}
}

// checkHeldBatch checks a batch decodeHeldBatch made of data against the
// one decodeBatch made: the same count and bytes before its records are
// decoded, the same batch after, and, until then and after, encodeBatch
// gives back data itself.
func checkHeldBatch(t *testing.T, data []byte, held, want batch) {
	t.Helper()
	if n, size := held.size(); n != int64(len(want.Lines)) || size != recordBytes(want.Lines) {
		t.Fatalf("%x: held batch of %d records, %d bytes; want %d, %d", data, n, size, len(want.Lines), recordBytes(want.Lines))
	}
	if held.held != nil {
		enc, err := encodeBatch(held)
		if err != nil || !bytes.Equal(enc, data) || &enc[0] != &data[0] {
			t.Fatalf("%x: a held batch re-encodes to %x (%v), not to its own bytes", data, enc, err)
		}
	} else if data[4] >= 3 {
		t.Fatalf("%x: a batch of version %d was decoded whole", data, data[4])
	}
	if err := held.decodeRecords(); err != nil {
		t.Fatalf("%x: decodeRecords: %v", data, err)
	}
	if held.held != nil {
		// The records alias the runner's bytes: the writer keeps them.
		held.dropOwnEncoding()
		if enc, err := encodeBatch(held); err != nil || &enc[0] != &data[0] {
			t.Fatalf("%x: a held batch dropped the runner's bytes it aliases (%v)", data, err)
		}
	}
	held.held = nil
	if !reflect.DeepEqual(held, want) {
		t.Fatalf("%x: held batch decodes to %+v, want %+v", data, held, want)
	}
}

// TestHeldBatch: the writer's batch reaches it from the runner's bytes
// before it can reserve memory. The batch coder's decoder
// (decodeHeldBatch) leaves its records held in those bytes: its size is
// known before they are split, it encodes as the same bytes whether or not
// the writer has split them (decodeRecords) and let go of its own
// encoding, and once split it is the batch decodeBatch makes. A batch of
// a build before batch version 3 is split at once. A damaged batch is
// refused as a malformed batch, not as an invalid token.
func TestHeldBatch(t *testing.T) {
	small := batch{Destination: "d", Window: "global", Shards: 1, SubBatches: 1, Lines: [][]byte{[]byte("a\n"), []byte("b\n")}}
	large := batch{Destination: "d", Window: "global", Shards: 1, SubBatches: 1}
	for i := range 2000 {
		large.Lines = append(large.Lines, fmt.Appendf(nil, "record %06d\n", i))
	}
	var inputs [][]byte
	for i, b := range []batch{small, large} {
		enc, err := encodeBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if want := byte(3 + i); enc[4] != want { // plain, then compressed
			t.Fatalf("a batch of %d records encoded as version %d, want %d", len(b.Lines), enc[4], want)
		}
		inputs = append(inputs, enc)
	}
	for _, name := range []string{"batch_v1.bin", "batch_v2_split.bin"} {
		data, err := os.ReadFile(filepath.Join("..", "internal", "batchwire", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, data)
	}
	for _, data := range inputs {
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
	bad := bytes.Clone(inputs[0])
	bad[len(bad)-1] ^= 1
	for _, decode := range []func([]byte) (batch, error){decodeBatch, decodeHeldBatch} {
		if _, err := decode(bad); !errors.Is(err, batchwire.ErrMalformed) || errors.Is(err, recoverable.ErrInvalidToken) || !strings.HasPrefix(err.Error(), "s3once sink: ") {
			t.Fatalf("a damaged batch: %v, want the sink's malformed batch", err)
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
			want, err := batchCodec.Encode(b.header(), b.Lines)
			if err != nil {
				t.Fatal(err)
			}
			var held batch // a copy, as the SDK's invokers keep it
			passed := false
			stage := elementFunc(func(fv *exec.FullValue) error {
				held = fv.Elm.(batch)
				if held.memo == nil || held.Lines != nil {
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
				if held.memo.frame != nil {
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
			if held.memo.lines != nil || held.memo.frame != nil {
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
