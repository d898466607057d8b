package sink

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minio/crc64nvme"
	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

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

// golden compares enc with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, enc []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(enc, want) {
		t.Fatalf("encoding differs from %s: a change of the format needs a new version", path)
	}
	return want
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
			got, err := decodeRestriction(golden(t, name, enc))
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
	for name, b := range map[string]batch{"batch_v3.bin": fixtureBatch(), "batch_v3_split.bin": split} {
		t.Run(name, func(t *testing.T) {
			enc, err := encodeBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeBatch(golden(t, name, enc))
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
			if enc[4] != batchVersion {
				t.Fatalf("re-encoded as version %d, want %d", enc[4], batchVersion)
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
	if err != nil || v != batchVersion || len(p) != len(enc)-frame.Overhead {
		t.Fatalf("Unframe: version %d, %d payload bytes, %v; want %d, %d", v, len(p), err, batchVersion, len(enc)-frame.Overhead)
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
}

func TestRestrictionRejects(t *testing.T) {
	good, err := encodeRestriction(restriction{Start: 3, End: 9, FileIndex: 1, FileRecords: 2, FileBytes: 10, Token: fixtureToken(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := decodeRestriction(bad); !errors.Is(err, errRestrictionEncoding) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := range good {
		if _, err := decodeRestriction(good[:n]); !errors.Is(err, errRestrictionEncoding) {
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
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x01
		if _, err := decodeBatch(bad); !errors.Is(err, errBatchEncoding) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	for n := range good {
		if _, err := decodeBatch(good[:n]); !errors.Is(err, errBatchEncoding) {
			t.Fatalf("cut at %d: %v", n, err)
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
	for _, name := range []string{"batch_v1.bin", "batch_v2.bin", "batch_v2_split.bin", "batch_v3.bin", "batch_v3_split.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("S3WB\x01"))
	f.Add([]byte("S3WB\x02"))
	f.Add([]byte("S3WB\x03\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBatch(data)
		if err != nil {
			if !errors.Is(err, errBatchEncoding) {
				t.Fatalf("error %v does not wrap errBatchEncoding", err)
			}
			return
		}
		enc, err := encodeBatch(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if data[4] == batchVersion {
			if !bytes.Equal(enc, data) {
				t.Fatalf("%x decodes to a batch that encodes to %x", data, enc)
			}
			return
		}
		// An older version re-encodes as the current one, to the same batch.
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
