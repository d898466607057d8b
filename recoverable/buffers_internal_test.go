package recoverable

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestPartBodyRetire: a retired body reads nothing more, and retire reports a
// read in progress instead of waiting for it.
func TestPartBodyRetire(t *testing.T) {
	buf := []byte("0123456789")
	b := newPartBody(buf)
	p := make([]byte, 4)
	if n, err := b.Read(p); n != 4 || err != nil || string(p) != "0123" {
		t.Fatalf("read: %d %v %q", n, err, p[:n])
	}
	if _, err := b.Seek(0, io.SeekStart); err != nil || b.Len() != len(buf) {
		t.Fatalf("seek to start: %v, Len %d", err, b.Len())
	}
	if !b.retire() {
		t.Fatal("retire with no read in progress reported the buffer busy")
	}
	if n, err := b.Read(p); n != 0 || !errors.Is(err, errBodyRetired) {
		t.Fatalf("read after retire: %d bytes, %v; want errBodyRetired", n, err)
	}

	busy := newPartBody(buf)
	busy.mu.Lock() // a read in progress
	if busy.retire() {
		t.Fatal("retire during a read reported the buffer free")
	}
	busy.mu.Unlock()
	if _, err := busy.Read(p); !errors.Is(err, errBodyRetired) {
		t.Fatalf("read after a busy retire: %v, want errBodyRetired", err)
	}
}

// TestPartPoolBound: the pool keeps at most its bound, only buffers of its
// part size, and hands each one out once.
func TestPartPoolBound(t *testing.T) {
	p := newPartPool(MinPartSize, 2)
	if p.get() != nil {
		t.Fatal("an empty pool gave a buffer")
	}
	a, b, c := make([]byte, 3, MinPartSize), make([]byte, 0, MinPartSize), make([]byte, 0, MinPartSize)
	p.put(a)
	p.put(b)
	p.put(c)                      // beyond the bound
	p.put(make([]byte, 0, 1<<20)) // another size
	p.put(nil)                    // nothing
	if p.idle() != 2 {
		t.Fatalf("pool holds %d buffers, want its bound 2", p.idle())
	}
	x, y := p.get(), p.get()
	if len(x) != 0 || len(y) != 0 || &x[:1][0] == &y[:1][0] || p.get() != nil {
		t.Fatal("the pool gave the same buffer twice, a non-empty one, or more than it holds")
	}
	var nilPool *partPool
	nilPool.put(a)
	if nilPool.get() != nil {
		t.Fatal("a nil pool gave a buffer")
	}
}

// holdingS3 answers UploadPart without reading the body, and keeps the body of
// part hold in the middle of a read (its lock held) until release: a
// transport still writing an abandoned request.
type holdingS3 struct {
	S3
	hold int32

	mu     sync.Mutex
	held   *partBody
	bodies map[int32][]byte // what each part's body gave when read at once
}

func (f *holdingS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	body := in.Body.(*partBody)
	f.mu.Lock()
	defer f.mu.Unlock()
	if *in.PartNumber == f.hold {
		body.mu.Lock()
		f.held = body
	} else {
		data, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		f.bodies[*in.PartNumber] = data
	}
	return &s3.UploadPartOutput{ETag: aws.String("\"etag\"")}, nil
}

func (f *holdingS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return &s3.AbortMultipartUploadOutput{}, nil
}

// TestBusyBufferNeverPooled: a buffer whose request body may still be read
// after its upload returned goes neither back to the stream nor to the pool,
// and a later stream of the writer writes its bytes into other buffers.
func TestBusyBufferNeverPooled(t *testing.T) {
	f := &holdingS3{hold: 1, bodies: map[int32][]byte{}}
	w, err := NewWriter(f, Options{PartSize: MinPartSize, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := w.newStream(ctx, "bucket", "key", "upload", MinPartSize, DefaultStagingPrefix)
	first := bytes.Repeat([]byte{1}, MinPartSize)
	if _, err := s.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := s.drain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(bytes.Repeat([]byte{2}, 100)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseForCommit(ctx); err != nil {
		t.Fatal(err)
	}
	held := f.held
	if held == nil {
		t.Fatal("part 1 was never uploaded")
	}
	heldBuf := &held.buf[:1][0]
	if w.pool.idle() == 0 {
		t.Fatal("the stream's other buffer did not go back to the pool")
	}
	// The next stream takes every buffer the pool holds, and none of them is
	// the one still being read.
	s2 := w.newStream(ctx, "bucket", "key2", "upload2", MinPartSize, DefaultStagingPrefix)
	for w.pool.idle() > 0 {
		b := w.pool.get()
		if &b[:1][0] == heldBuf {
			t.Fatal("the buffer of a body still being read went back to the pool")
		}
	}
	if _, err := s2.Write(bytes.Repeat([]byte{3}, MinPartSize)); err != nil {
		t.Fatal(err)
	}
	_ = s2.Dispose(ctx)
	// The abandoned read goes on over the first file's bytes, then fails.
	held.mu.Unlock()
	p := make([]byte, 8)
	if _, err := held.Read(p); !errors.Is(err, errBodyRetired) {
		t.Fatalf("read of a retired body: %v", err)
	}
	if !bytes.Equal(held.buf, first) {
		t.Fatal("the buffer of a body still being read was written over")
	}
}
