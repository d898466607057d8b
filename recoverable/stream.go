package recoverable

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/s3call"
)

// Stream writes one file as a multipart upload. Full parts are uploaded in the
// background while Write goes on; Persist makes everything written so far
// durable and returns a token to resume from; CloseForCommit ends the file and
// returns a token to commit. A Stream is used by one goroutine at a time.
//
// Memory: a stream holds at most PartSize x (Concurrency + 1) bytes of buffers,
// whatever the file's size. When the server is slower than the writer, Write
// blocks until a part upload finishes. The buffers come from its Writer's pool
// and go back to it when the stream is closed for commit or disposed, so a
// Writer that writes file after file allocates them once (see Writer).
type Stream struct {
	client  S3
	opts    Options
	pool    *partPool
	bucket  string
	key     string
	upload  string
	staging string
	size    int64 // part size
	nonce   string

	ctx    context.Context // runs part uploads; cancelled by Dispose
	cancel context.CancelFunc
	sem    chan struct{} // one token per upload in flight
	free   chan []byte   // buffers back from finished uploads; nil for one left to the collector
	nbufs  int           // buffers taken so far

	buf       []byte // the part being filled
	bufCRC    uint64 // CRC64NVME of buf's bytes, kept up to date by Write
	pos       int64
	nextPart  int32
	seq       uint64
	persisted bool // a token may reference the upload: never abort it
	closed    bool

	mu      sync.Mutex
	parts   PartList       // parts 1..parts.Count, all uploaded
	pending map[int32]Part // uploaded parts waiting for a gap below them
	err     error          // first upload failure; the stream is broken
}

func (w *Writer) newStream(ctx context.Context, bucket, key, upload string, partSize int64, staging string) *Stream {
	sctx, cancel := context.WithCancel(ctx)
	return &Stream{
		client:   w.client,
		opts:     w.opts,
		pool:     w.pool,
		bucket:   bucket,
		key:      key,
		upload:   upload,
		staging:  staging,
		size:     partSize,
		nonce:    newNonce(),
		ctx:      sctx,
		cancel:   cancel,
		sem:      make(chan struct{}, w.opts.Concurrency),
		free:     make(chan []byte, w.opts.Concurrency+1),
		nextPart: 1,
		pending:  make(map[int32]Part),
	}
}

// Bucket, Key and UploadID name the file and its upload.
func (s *Stream) Bucket() string   { return s.bucket }
func (s *Stream) Key() string      { return s.key }
func (s *Stream) UploadID() string { return s.upload }

// Position is the number of bytes the file holds so far.
func (s *Stream) Position() int64 { return s.pos }

// PartSize is the size of every part but the last.
func (s *Stream) PartSize() int64 { return s.size }

func (s *Stream) fail(op string, err error, hint string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Bucket: s.bucket, Key: s.key, UploadID: s.upload, Hint: hint, Err: err}
}

func (s *Stream) broken() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write appends p to the file. It returns an error if a background part upload
// failed (the stream is then broken: recover from the last token), if the stream
// is closed, or, wrapping ErrPartLimit, when p does not fit in the parts the
// writer allows; n bytes were taken in every case.
func (s *Stream) Write(p []byte) (n int, err error) {
	if s.closed {
		return 0, s.fail("write", ErrClosed, "")
	}
	if err := s.broken(); err != nil {
		return 0, err
	}
	for len(p) > 0 {
		if s.buf == nil {
			if s.buf, err = s.getBuffer(); err != nil {
				return n, err
			}
		}
		if int64(len(s.buf)) == s.size {
			// A full buffer waits here at the part limit (it is the last part),
			// or after recovering a token taken there by a writer with a lower
			// MaxParts than this one.
			if int(s.nextPart) >= s.opts.MaxParts {
				return n, s.fail("write", fmt.Errorf("%w: part %d of %d is full", ErrPartLimit, s.nextPart, s.opts.MaxParts), hintPartLimit)
			}
			if err := s.flush(); err != nil {
				return n, err
			}
			continue
		}
		c := s.fill(p)
		p = p[c:]
		n += c
		s.pos += int64(c)
		if int64(len(s.buf)) == s.size && int(s.nextPart) < s.opts.MaxParts {
			if err := s.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// crcPiece is how many bytes fill copies before it checksums them: small
// enough that the piece just written is still in the CPU's cache when the
// checksum reads it.
const crcPiece = 64 << 10

// fill copies as much of p as fits into the part being filled and returns
// how many bytes it took. It checksums the bytes as it copies them, a piece
// at a time while each piece is still in the cache, instead of reading the
// whole part again from memory before its upload. The checksum is taken of
// the bytes in the part buffer, so the CRC64NVME header sent with the part
// vouches for the buffer as Write left it: if anything changed the buffer
// before the upload read it, the server refuses the part.
func (s *Stream) fill(p []byte) int {
	n := min(len(p), int(s.size)-len(s.buf))
	for done := 0; done < n; {
		k := min(n-done, crcPiece)
		at := len(s.buf)
		s.buf = append(s.buf, p[done:done+k]...)
		s.bufCRC = crc64nvme.Update(s.bufCRC, s.buf[at:])
		done += k
	}
	return n
}

// getBuffer returns an empty part buffer, blocking while Concurrency+1 buffers
// are in use.
func (s *Stream) getBuffer() ([]byte, error) {
	select {
	case b := <-s.free:
		return s.reuse(b), nil
	default:
	}
	if s.nbufs < cap(s.free) {
		s.nbufs++
		return s.newBuffer(), nil
	}
	select {
	case b := <-s.free:
		return s.reuse(b), nil
	case <-s.ctx.Done():
		if err := s.broken(); err != nil {
			return nil, err
		}
		return nil, s.fail("write", context.Cause(s.ctx), "")
	}
}

// reuse empties a buffer back from an upload; nil stands for one that an
// abandoned request may still read, replaced by another.
func (s *Stream) reuse(b []byte) []byte {
	if b == nil {
		return s.newBuffer()
	}
	return b[:0]
}

// newBuffer takes an idle buffer from the writer's pool, or allocates one.
func (s *Stream) newBuffer() []byte {
	if s.pool != nil && s.pool.size == s.size {
		if b := s.pool.get(); b != nil {
			return b
		}
	}
	return make([]byte, 0, s.size)
}

// detach moves the part being filled into another buffer, leaving the old one,
// which an abandoned request may still read, to the collector.
func (s *Stream) detach() {
	s.buf = append(s.newBuffer(), s.buf...)
}

func (s *Stream) takeBuffer() []byte {
	b, _ := s.getBuffer() // never blocks: called on a fresh stream
	return b
}

// flush hands the full buffer to a background upload as the next part.
func (s *Stream) flush() error {
	select {
	case s.sem <- struct{}{}:
	case <-s.ctx.Done():
		if err := s.broken(); err != nil {
			return err
		}
		return s.fail("write", context.Cause(s.ctx), "")
	}
	buf, crc, num := s.buf, s.bufCRC, s.nextPart
	s.buf, s.bufCRC = nil, 0
	s.nextPart++
	go func() {
		defer func() { <-s.sem }()
		part, free, err := s.uploadPart(s.ctx, num, buf, crc)
		if !free {
			buf = nil
		}
		s.free <- buf
		s.record(part, err)
	}()
	return nil
}

// uploadPart uploads buf, whose CRC64NVME is crc, as part num and reports the
// part as the server saw it, and whether buf is free again: no request body
// over it can be read any more (false when a transport still reads an
// abandoned attempt's body; the buffer must then not be reused).
func (s *Stream) uploadPart(ctx context.Context, num int32, buf []byte, crc uint64) (Part, bool, error) {
	in := &s3.UploadPartInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key), UploadId: aws.String(s.upload),
		PartNumber: aws.Int32(num), ContentLength: aws.Int64(int64(len(buf))),
	}
	if !s.opts.DisableChecksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
		in.ChecksumCRC64NVME = aws.String(s3call.EncodeCRC(crc))
	}
	var bodies bodies
	out, err := s3call.Do(ctx, s.opts.policy(), fmt.Sprintf("upload part %d", num), func(ctx context.Context) (*s3.UploadPartOutput, error) {
		in.Body = bodies.over(buf)
		return s.client.UploadPart(ctx, in, s.bodyOptions()...)
	})
	free := bodies.retire()
	if err != nil {
		if s3call.IsNoSuchUpload(err) {
			return Part{}, free, s.fail("upload part", fmt.Errorf("%w: %w", ErrNoSuchUpload, err), hintUploadGone)
		}
		return Part{}, free, s.fail("upload part", err, "")
	}
	if c, ok := s3call.DecodeCRC(aws.ToString(out.ChecksumCRC64NVME)); ok && c != crc {
		return Part{}, free, s.fail("upload part", fmt.Errorf("part %d: server stored CRC64NVME %016x, sent %016x", num, c, crc), "")
	}
	return Part{Number: num, Size: int64(len(buf)), ETag: aws.ToString(out.ETag), CRC: crc}, free, nil
}

// bodyOptions are the per-call options of requests that carry data. With a
// CRC64NVME header on the request, the server verifies every byte, so the
// SDK's SHA-256 of the body for the signature (computed on plain-http
// endpoints; over TLS it already sends the body unsigned) is a second hash of
// the same bytes that protects nothing more: it is skipped.
func (s *Stream) bodyOptions() []func(*s3.Options) {
	if s.opts.DisableChecksums {
		return nil
	}
	return unsignedBody
}

var unsignedBody = []func(*s3.Options){s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)}

// record folds a finished upload into the part list, in part order.
func (s *Stream) record(p Part, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
			s.cancel() // stop the other uploads; the stream is broken
		}
		return
	}
	s.pending[p.Number] = p
	for {
		next, ok := s.pending[int32(s.parts.Count)+1]
		if !ok {
			return
		}
		delete(s.pending, next.Number)
		s.parts = s.parts.Append(next)
	}
}

// drain waits until no upload is in flight.
func (s *Stream) drain(ctx context.Context) error {
	for i := 0; i < cap(s.sem); i++ {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			for ; i > 0; i-- {
				<-s.sem
			}
			return s.fail("wait for parts", ctx.Err(), "")
		}
	}
	for i := 0; i < cap(s.sem); i++ {
		<-s.sem
	}
	return s.broken()
}

// Persist makes every byte written so far durable and returns a token that
// Recover turns back into a stream at this position. Full parts are waited for;
// the tail (bytes past the last part) goes into the token when it is at most
// InlineTailMax bytes, else into a new side object. The stream stays open.
//
// A token that Persist returned stays valid until the upload is committed,
// aborted, or swept, or its side object is deleted with Cleanup. A failed
// Persist leaves the stream usable (unless a part upload failed, which breaks
// it); the next Persist writes its side object under another key, so a late
// write of the failed attempt can never replace a newer token's tail.
func (s *Stream) Persist(ctx context.Context) (ResumeToken, error) {
	if s.closed {
		return ResumeToken{}, s.fail("persist", ErrClosed, "")
	}
	// Every attempt takes a sequence number of its own, failed ones too: the
	// PUT of a failed attempt may still land later (its reply was lost, or a
	// stalled connection delivers it), and it must land on a key no token
	// names. Sequence numbers of tokens are therefore increasing, not
	// consecutive.
	s.seq++
	seq := s.seq
	tail := Tail{Len: int64(len(s.buf)), CRC: s.bufCRC}
	// The tail uploads while the parts in flight finish: the buffer does not
	// change during Persist, and the token is only handed out once both are
	// done. A side object whose Persist failed is just garbage under the
	// upload's prefix, removed with the others at commit or by the sweep.
	var g errgroup.Group
	tailHeld := false // set by the side-object upload, read after Wait
	g.Go(func() error { return s.drain(ctx) })
	switch {
	case len(s.buf) == 0:
	case len(s.buf) <= s.opts.InlineTailMax:
		tail.Inline = append([]byte(nil), s.buf...)
	default:
		tail.Object = SideObjectKey(s.staging, s.upload, seq, s.nonce)
		in := &s3.PutObjectInput{
			Bucket: aws.String(s.bucket), Key: aws.String(tail.Object),
			ContentLength: aws.Int64(tail.Len),
		}
		if !s.opts.DisableChecksums {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
			in.ChecksumCRC64NVME = aws.String(s3call.EncodeCRC(tail.CRC))
		}
		buf := s.buf
		g.Go(func() error {
			var bodies bodies
			_, err := s3call.Do(ctx, s.opts.policy(), "put side object "+tail.Object, func(ctx context.Context) (*s3.PutObjectOutput, error) {
				in.Body = bodies.over(buf)
				return s.client.PutObject(ctx, in, s.bodyOptions()...)
			})
			if !bodies.retire() {
				// An abandoned attempt's body may still be read: the stream
				// goes on in a copy, and this buffer is left to the collector.
				tailHeld = true
			}
			if err != nil {
				return s.fail("persist", err, "")
			}
			return nil
		})
	}
	err := g.Wait()
	if tailHeld {
		s.detach()
	}
	if err != nil {
		if mutReusePersistKey() {
			s.seq--
		}
		return ResumeToken{}, err
	}
	s.persisted = true
	s.mu.Lock()
	parts := s.parts
	s.mu.Unlock()
	return ResumeToken{
		Bucket: s.bucket, Key: s.key, UploadID: s.upload,
		PartSize: s.size, StagingPrefix: s.staging, Seq: seq,
		Parts: parts, Tail: tail,
	}, nil
}

// CloseForCommit uploads what is left as the last part, waits for every part and
// returns the token that commits the file. The stream is closed afterwards. An
// empty file (no byte ever written) becomes a zero-byte object.
func (s *Stream) CloseForCommit(ctx context.Context) (CommitToken, error) {
	if s.closed {
		return CommitToken{}, s.fail("close for commit", ErrClosed, "")
	}
	if err := s.drain(ctx); err != nil {
		return CommitToken{}, err
	}
	if len(s.buf) > 0 || s.nextPart == 1 {
		part, free, err := s.uploadPart(ctx, s.nextPart, s.buf, s.bufCRC)
		if !free {
			s.detach()
		}
		if err != nil {
			return CommitToken{}, err
		}
		s.nextPart++
		s.record(part, nil)
	}
	s.mu.Lock()
	parts := s.parts
	s.mu.Unlock()
	if parts.Count != int(s.nextPart)-1 {
		return CommitToken{}, s.fail("close for commit", fmt.Errorf("internal: %d parts folded of %d uploaded", parts.Count, s.nextPart-1), "")
	}
	s.closed = true
	s.persisted = true
	s.release()
	return CommitToken{
		Bucket: s.bucket, Key: s.key, UploadID: s.upload,
		StagingPrefix: s.staging, Parts: parts,
	}, nil
}

// Dispose stops the stream and frees its buffers. It never destroys what a token
// may reference: the upload is aborted only if the stream was never persisted
// nor closed for commit (no token can name it). Parts still uploading are
// cancelled. Dispose is safe to call more than once and after CloseForCommit.
func (s *Stream) Dispose(ctx context.Context) error {
	wasClosed := s.closed
	s.closed = true
	s.cancel()
	// Wait for cancelled uploads to return their buffers and slots.
	for i := 0; i < cap(s.sem); i++ {
		s.sem <- struct{}{}
	}
	for i := 0; i < cap(s.sem); i++ {
		<-s.sem
	}
	s.release()
	if wasClosed || s.persisted || s.upload == "" {
		return nil
	}
	s.persisted = true // abort once
	actx, cancel := s3call.Detached(ctx, s3call.DefaultCleanupTimeout)
	defer cancel()
	_, err := s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key), UploadId: aws.String(s.upload),
	})
	if err != nil && !s3call.IsNoSuchUpload(err) {
		return s.fail("dispose", fmt.Errorf("abort unpersisted upload (the sweep will remove it): %w", err), "")
	}
	return nil
}

// release gives the stream's idle buffers back to the writer's pool. Buffers
// still out with uploads are not there: release runs once none is in flight
// (after drain or after Dispose waited for them).
func (s *Stream) release() {
	s.pool.put(s.buf)
	s.buf, s.bufCRC = nil, 0
	for {
		select {
		case b := <-s.free:
			s.pool.put(b)
		default:
			return
		}
	}
}
