package recoverable

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/minio/crc64nvme"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestWriteChecksumsAsItCopies: the CRC64NVME that Write keeps while it
// copies is the checksum of the part buffer's bytes after writes of any size
// (one byte to several pieces, across part boundaries), and so are the
// checksums sent with the parts (the in-memory server refuses a part whose
// header does not match its body), the tails of the tokens, a recovered
// stream's, and the file's.
func TestWriteChecksumsAsItCopies(t *testing.T) {
	fake := s3mem.New(s3mem.Options{})
	w, err := NewWriter(fake.NewClient(s3mem.ClientOptions{}), Options{PartSize: MinPartSize, Concurrency: 2, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	data := make([]byte, 3*MinPartSize+777_777)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	s, err := w.Open(ctx, fake.Bucket(), "k", ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	sizes := []int{1, 3, crcPiece - 1, crcPiece, crcPiece + 1, 3*crcPiece + 17, 1 << 20, 3 << 20}
	var mid ResumeToken
	for off, i := 0, 0; off < len(data); i++ {
		n := min(sizes[rng.IntN(len(sizes))], len(data)-off)
		if _, err := s.Write(data[off : off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
		if got, want := s.bufCRC, crc64nvme.Checksum(s.buf); got != want {
			t.Fatalf("after %d bytes: kept CRC64NVME %016x, the buffer's is %016x", off, got, want)
		}
		if i%5 == 4 {
			rr, err := s.Persist(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := crc64nvme.Checksum(data[rr.Parts.Bytes:off]); rr.Tail.CRC != want {
				t.Fatalf("token at %d bytes: tail CRC64NVME %016x, want %016x", off, rr.Tail.CRC, want)
			}
			if mid.Seq == 0 && off > len(data)/2 && rr.Tail.Len > 0 {
				mid = rr
			}
		}
	}
	if mid.Seq == 0 {
		t.Fatal("no token with a tail past the middle")
	}
	s.Dispose(ctx)

	r, err := w.Recover(ctx, mid)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Dispose(ctx)
	if got, want := r.bufCRC, crc64nvme.Checksum(r.buf); got != want {
		t.Fatalf("recovered stream: kept CRC64NVME %016x, the buffer's is %016x", got, want)
	}
	if _, err := r.Write(data[mid.Size():]); err != nil {
		t.Fatal(err)
	}
	cr, err := r.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Size() != int64(len(data)) || cr.CRC() != crc64nvme.Checksum(data) {
		t.Fatalf("commit token: %d bytes, CRC64NVME %016x; want %d, %016x", cr.Size(), cr.CRC(), len(data), crc64nvme.Checksum(data))
	}
}

// TestBufferChangedBeforeUploadRefused: the checksum sent with a part is the
// one taken as Write copied the bytes, so a part buffer changed between Write
// and the upload (a buffer handed out twice, say) is refused by the server,
// never stored.
func TestBufferChangedBeforeUploadRefused(t *testing.T) {
	fake := s3mem.New(s3mem.Options{})
	w, err := NewWriter(fake.NewClient(s3mem.ClientOptions{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := w.Open(ctx, fake.Bucket(), "k", ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	if _, err := s.Write([]byte("the bytes the caller wrote")); err != nil {
		t.Fatal(err)
	}
	s.buf[4] ^= 0x20
	_, err = s.CloseForCommit(ctx)
	if err == nil {
		t.Fatal("a part whose buffer changed after Write was taken")
	}
	if code := s3call.APICode(err); code != "BadDigest" {
		t.Fatalf("error code %q (%v), want BadDigest", code, err)
	}
}
