// Package streamtest is the conformance suite of the recoverable stream contract.
// Any S3 backend runs it: the real server, a server behind a proxy, or an
// in-process fake, which must pass it before it may stand in for S3 anywhere.
// Each subtest is one case of the stream's failure matrix (docs/testing.md,
// "Which test proves what") that needs no process kill (those live beside
// the server that can be killed).
package streamtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// Backend is what the suite needs of an S3 implementation.
type Backend interface {
	recoverable.S3
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Env gives the suite a backend and a fresh bucket per test.
type Env struct {
	Client Backend
	// Bucket returns a new, empty bucket.
	Bucket func(t *testing.T) string
}

// PartSize is the part size the suite writes with: S3's minimum, so files of a
// few parts stay small.
const PartSize = recoverable.MinPartSize

// Run runs every subtest of the suite.
func Run(t *testing.T, env Env) {
	tests := []struct {
		name string
		fn   func(t *testing.T, env Env)
	}{
		{"TailSurvivesRecover/SideObject", func(t *testing.T, e Env) { tailSurvives(t, e, 0) }},
		{"TailSurvivesRecover/Inline", func(t *testing.T, e Env) { tailSurvives(t, e, 4<<10) }},
		{"TailSurvivesRecover/NoTail", func(t *testing.T, e Env) { tailSurvivesAt(t, e, 2*PartSize) }},
		{"RecoverForCommit", recoverForCommit},
		{"RecoverTwiceFromOneToken", recoverTwice},
		{"BytesAfterPersistAbsent", bytesAfterPersistAbsent},
		{"OlderTokenAfterNewerPersist", olderToken},
		{"SideObjectDeleted", func(t *testing.T, e Env) { damagedTail(t, e, "delete", recoverable.ErrSideObjectMissing) }},
		{"SideObjectTruncated", func(t *testing.T, e Env) { damagedTail(t, e, "truncate", recoverable.ErrTailCorrupt) }},
		{"SideObjectFlippedByte", func(t *testing.T, e Env) { damagedTail(t, e, "flip", recoverable.ErrTailCorrupt) }},
		{"SideObjectLonger", func(t *testing.T, e Env) { damagedTail(t, e, "extend", recoverable.ErrTailCorrupt) }},
		{"InlineTailAltered", inlineAltered},
		{"UploadAbortedOutside", uploadAborted},
		{"ZombieWriter", zombie},
		{"PartOverwrittenByZombie", partOverwritten},
		{"PartReuploadedWithSameBytes", partReuploaded},
		{"PartLimit", partLimit},
		{"EmptyFile", emptyFile},
		{"OptionsChangedBetweenPersistAndRecover", optionsChanged},
		{"CleanupDeletesOnlySideObject", cleanup},
		{"DisposeAbortsOnlyUnpersisted", dispose},
		{"SeededPersistRecoverChains", seededChains},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.HasPrefix(tc.name, "SideObject") {
				// The damaged-tail tests watch the temporary folder: they set
				// TMPDIR, which parallel tests may not.
				t.Parallel()
			}
			tc.fn(t, env)
		})
	}
}

// Data returns n deterministic pseudo-random bytes.
func Data(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func newWriter(t *testing.T, env Env, o recoverable.Options) *recoverable.Writer {
	t.Helper()
	if o.PartSize == 0 {
		o.PartSize = PartSize
	}
	if o.Concurrency == 0 {
		o.Concurrency = 2
	}
	w, err := recoverable.NewWriter(env.Client, o)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return w
}

// Open opens a stream at key with default object options, failing the test
// at once if the server refuses: every later step needs the stream.
func Open(t *testing.T, w *recoverable.Writer, bucket, key string) *recoverable.Stream {
	t.Helper()
	s, err := w.Open(context.Background(), bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatalf("Open %s: %v", key, err)
	}
	return s
}

func write(t *testing.T, s *recoverable.Stream, p []byte) {
	t.Helper()
	if n, err := s.Write(p); err != nil || n != len(p) {
		t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
	}
}

func persist(t *testing.T, s *recoverable.Stream) recoverable.ResumeToken {
	t.Helper()
	rr, err := s.Persist(context.Background())
	if err != nil {
		t.Fatalf("Persist: %v", err)
	}
	return rr
}

func recoverStream(t *testing.T, w *recoverable.Writer, rr recoverable.ResumeToken) *recoverable.Stream {
	t.Helper()
	s, err := w.Recover(context.Background(), rr)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if s.Position() != rr.Size() {
		t.Fatalf("recovered position %d, token describes %d bytes", s.Position(), rr.Size())
	}
	return s
}

func closeForCommit(t *testing.T, s *recoverable.Stream) recoverable.CommitToken {
	t.Helper()
	cr, err := s.CloseForCommit(context.Background())
	if err != nil {
		t.Fatalf("CloseForCommit: %v", err)
	}
	return cr
}

// Complete completes the upload of cr with exactly its parts, the way the
// committer does, but without its retries and verification: the suite tests the
// stream, not the committer.
func Complete(ctx context.Context, c Backend, cr recoverable.CommitToken) error {
	parts, err := recoverable.VerifyParts(ctx, c, cr.Bucket, cr.Key, cr.UploadID, cr.Parts)
	if err != nil {
		return err
	}
	cp := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.Number), ETag: aws.String(p.ETag)}
		if p.CRC != 0 || p.Size == 0 {
			cp[i].ChecksumCRC64NVME = aws.String(s3call.EncodeCRC(p.CRC))
		}
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cp},
		MpuObjectSize:   aws.Int64(cr.Size()),
		IfNoneMatch:     aws.String("*"),
	}
	// As the committer does: no full-object checksum for an empty object
	// (MinIO refuses the zero CRC64NVME there).
	if cr.Size() > 0 {
		in.ChecksumCRC64NVME = aws.String(s3call.EncodeCRC(cr.CRC()))
		in.ChecksumType = types.ChecksumTypeFullObject
	}
	_, err = c.CompleteMultipartUpload(ctx, in)
	return err
}

func commitAndCheck(t *testing.T, env Env, cr recoverable.CommitToken, want []byte) {
	t.Helper()
	ctx := context.Background()
	if cr.Size() != int64(len(want)) || cr.CRC() != crc64nvme.Checksum(want) {
		t.Fatalf("commit token describes %d bytes crc %016x, want %d bytes crc %016x", cr.Size(), cr.CRC(), len(want), crc64nvme.Checksum(want))
	}
	if err := Complete(ctx, env.Client, cr); err != nil {
		t.Fatalf("complete: %v", err)
	}
	got := s3test.Object(t, env.Client, cr.Bucket, cr.Key)
	if !bytes.Equal(got, want) {
		t.Fatalf("object holds %d bytes (crc %016x), want %d bytes (crc %016x); first difference at %d",
			len(got), crc64nvme.Checksum(got), len(want), crc64nvme.Checksum(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// tailSurvives is the regression for the tail Flink's writer lost: persist with a
// tail, drop the stream without closing it, recover, write more, close, commit.
func tailSurvives(t *testing.T, env Env, inline int) {
	t.Helper()
	tailSurvivesAt(t, env, PartSize+PartSize/3, recoverable.Options{InlineTailMax: inline})
}

func tailSurvivesAt(t *testing.T, env Env, cut int, opts ...recoverable.Options) {
	var o recoverable.Options
	if len(opts) > 0 {
		o = opts[0]
	} else {
		o.InlineTailMax = -1
	}
	if o.InlineTailMax == 0 {
		o.InlineTailMax = -1
	}
	bucket := env.Bucket(t)
	w := newWriter(t, env, o)
	data := Data(1, 3*PartSize+12345)
	if o.InlineTailMax > 0 {
		cut = 2*PartSize + o.InlineTailMax/2 // a tail small enough to ride inline
	}
	s, err := w.Open(context.Background(), bucket, "file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	write(t, s, data[:cut])
	rr := persist(t, s)
	wantTail := int64(cut % PartSize)
	if rr.Tail.Len != wantTail {
		t.Fatalf("token tail %d bytes, want %d", rr.Tail.Len, wantTail)
	}
	switch {
	case wantTail == 0:
		if rr.Tail.Object != "" || rr.Tail.Inline != nil {
			t.Fatalf("empty tail stored somewhere: %+v", rr.Tail)
		}
	case o.InlineTailMax > 0:
		if rr.Tail.Inline == nil || rr.Tail.Object != "" {
			t.Fatalf("tail of %d bytes not inline (max %d)", wantTail, o.InlineTailMax)
		}
	default:
		if rr.Tail.Object == "" {
			t.Fatalf("tail of %d bytes has no side object", wantTail)
		}
	}
	// The process dies: the stream is dropped without Close or Dispose.
	s2 := recoverStream(t, w, rr)
	write(t, s2, data[cut:])
	commitAndCheck(t, env, closeForCommit(t, s2), data)
}

func recoverForCommit(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(2, 2*PartSize+777)
	s := Open(t, w, bucket, "file")
	write(t, s, data)
	rr := persist(t, s)
	cr, err := w.RecoverForCommit(context.Background(), rr)
	if err != nil {
		t.Fatalf("RecoverForCommit: %v", err)
	}
	if cr.Parts.Count != 3 {
		t.Fatalf("commit token has %d parts, want 3 (the tail becomes the last)", cr.Parts.Count)
	}
	commitAndCheck(t, env, cr, data)
}

func recoverTwice(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(3, PartSize+4242)
	s := Open(t, w, bucket, "file")
	write(t, s, data)
	rr := persist(t, s)
	// First recovery writes other bytes, then dies; the second must not see them.
	s1 := recoverStream(t, w, rr)
	write(t, s1, Data(99, PartSize+10))
	if _, err := s1.Persist(context.Background()); err != nil {
		t.Fatalf("persist of first recovery: %v", err)
	}
	for i := 0; i < 2; i++ {
		cr, err := w.RecoverForCommit(context.Background(), rr)
		if err != nil {
			t.Fatalf("RecoverForCommit #%d: %v", i+1, err)
		}
		if cr.Size() != int64(len(data)) || cr.CRC() != crc64nvme.Checksum(data) {
			t.Fatalf("recovery #%d describes %d bytes crc %016x, want %d crc %016x", i+1, cr.Size(), cr.CRC(), len(data), crc64nvme.Checksum(data))
		}
		if i == 1 {
			commitAndCheck(t, env, cr, data)
		}
	}
}

func bytesAfterPersistAbsent(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(4, PartSize/2)
	s := Open(t, w, bucket, "file")
	write(t, s, data)
	rr := persist(t, s)
	// Enough after the persist to upload two more parts and leave a tail.
	write(t, s, Data(5, 2*PartSize+99))
	if _, err := s.Persist(context.Background()); err != nil {
		t.Fatalf("second persist: %v", err)
	}
	s2 := recoverStream(t, w, rr)
	commitAndCheck(t, env, closeForCommit(t, s2), data)
}

// olderToken: crash after persist N, before checkpoint N is taken: restore from
// N-1; N's side object and extra parts are ignored.
func olderToken(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(6, 3*PartSize)
	s := Open(t, w, bucket, "file")
	write(t, s, data[:PartSize+100])
	older := persist(t, s)
	write(t, s, data[PartSize+100:2*PartSize+500])
	newer := persist(t, s)
	if newer.Seq != older.Seq+1 || newer.Parts.Count != 2 {
		t.Fatalf("newer token seq %d parts %d", newer.Seq, newer.Parts.Count)
	}
	s2 := recoverStream(t, w, older)
	write(t, s2, data[PartSize+100:])
	commitAndCheck(t, env, closeForCommit(t, s2), data)
}

func damagedTail(t *testing.T, env Env, how string, want error) {
	// Nothing may land in the temporary folder while recovering.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	bucket := env.Bucket(t)
	ctx := context.Background()
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	s := Open(t, w, bucket, "file")
	tail := Data(7, 1000)
	write(t, s, Data(8, PartSize))
	write(t, s, tail)
	rr := persist(t, s)
	if err := s.Dispose(ctx); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	var put []byte
	switch how {
	case "delete":
		if _, err := env.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &rr.Tail.Object}); err != nil {
			t.Fatal(err)
		}
	case "truncate":
		put = tail[:len(tail)-1]
	case "flip":
		put = append([]byte(nil), tail...)
		put[500] ^= 0x40
	case "extend":
		put = append(append([]byte(nil), tail...), 'x')
	}
	if put != nil {
		if _, err := env.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &rr.Tail.Object, Body: bytes.NewReader(put)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := w.Recover(ctx, rr)
	checkTyped(t, err, want, rr)
	_, err = w.RecoverForCommit(ctx, rr)
	checkTyped(t, err, want, rr)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("recover left %d files in the temporary folder", len(left))
	}
}

func checkTyped(t *testing.T, err, want error, rr recoverable.ResumeToken) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	var e *recoverable.Error
	if !errors.As(err, &e) || e.Bucket != rr.Bucket || e.Key != rr.Key || e.UploadID != rr.UploadID {
		t.Fatalf("error %v does not name bucket, key and upload", err)
	}
}

func inlineAltered(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: 4096})
	s := Open(t, w, bucket, "file")
	write(t, s, Data(9, 100))
	rr := persist(t, s)
	rr.Tail.Inline = append([]byte(nil), rr.Tail.Inline...)
	rr.Tail.Inline[3] ^= 1
	_, err := w.Recover(context.Background(), rr)
	checkTyped(t, err, recoverable.ErrTailCorrupt, rr)
}

func uploadAborted(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	ctx := context.Background()
	w := newWriter(t, env, recoverable.Options{})
	s := Open(t, w, bucket, "file")
	write(t, s, Data(10, PartSize+10))
	rr := persist(t, s)
	if _, err := env.Client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String("file"), UploadId: &rr.UploadID}); err != nil {
		t.Fatal(err)
	}
	_, err := w.Recover(ctx, rr)
	checkTyped(t, err, recoverable.ErrNoSuchUpload, rr)
	// Nothing was written at the key.
	if _, err := env.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("file")}); !s3call.IsNotFound(err) {
		t.Fatalf("HEAD after failed recover: %v, want not found", err)
	}
}

// zombie: an older attempt keeps writing to the upload after a newer one
// recovered from the token. Its extra parts must not reach the committed file.
func zombie(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(11, 2*PartSize+300)
	old := Open(t, w, bucket, "file")
	write(t, old, data[:PartSize+100])
	rr := persist(t, old)
	fresh := recoverStream(t, w, rr)
	write(t, fresh, data[PartSize+100:])
	cr := closeForCommit(t, fresh)
	// The zombie writes parts 2 and 3 with other bytes after the new attempt
	// closed: a listed part (2) changes under the token.
	write(t, old, Data(12, 2*PartSize+1))
	if _, err := old.Persist(context.Background()); err != nil {
		t.Fatalf("zombie persist: %v", err)
	}
	err := Complete(context.Background(), env.Client, cr)
	checkTypedCommit(t, err, recoverable.ErrPartsChanged, cr)
}

// partOverwritten: the zombie overwrites only parts the token does not list;
// the commit is unaffected.
func partOverwritten(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(13, PartSize+300)
	old := Open(t, w, bucket, "file")
	write(t, old, data[:PartSize+100])
	rr := persist(t, old)
	cr, err := w.RecoverForCommit(context.Background(), rr)
	if err != nil {
		t.Fatalf("RecoverForCommit: %v", err)
	}
	// The zombie goes on with parts 2 and 3, after the tail became part 2 — so
	// part 2 changes: that must be caught.
	write(t, old, Data(14, 2*PartSize+5))
	if _, err := old.Persist(context.Background()); err != nil {
		t.Fatalf("zombie persist: %v", err)
	}
	err = Complete(context.Background(), env.Client, cr)
	checkTypedCommit(t, err, recoverable.ErrPartsChanged, cr)

	// Now a zombie that only adds parts beyond the token's: harmless.
	bucket2 := env.Bucket(t)
	old2 := Open(t, w, bucket2, "file")
	write(t, old2, data[:PartSize])
	rr2 := persist(t, old2)
	s2 := recoverStream(t, w, rr2)
	cr2 := closeForCommit(t, s2) // exactly one part
	write(t, old2, Data(15, PartSize+1))
	if _, err := old2.Persist(context.Background()); err != nil {
		t.Fatalf("zombie persist: %v", err)
	}
	commitAndCheck(t, env, cr2, data[:PartSize])
}

// partReuploaded: an attempt restored from an older token replays the same
// records, so it uploads parts the newer token lists again, with the same
// bytes. Where ETags are not digests of the bytes (SSE-KMS), those parts now
// have other ETags; the newer token must still recover and commit exactly.
func partReuploaded(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(22, 3*PartSize+500)
	s := Open(t, w, bucket, "file")
	write(t, s, data[:100])
	older := persist(t, s)
	write(t, s, data[100:2*PartSize+300])
	newer := persist(t, s)
	if newer.Parts.Count != 2 {
		t.Fatalf("newer token lists %d parts, want 2", newer.Parts.Count)
	}
	replay := recoverStream(t, w, older)
	write(t, replay, data[100:2*PartSize+300])
	persist(t, replay) // parts 1 and 2 are uploaded again, same bytes
	s2 := recoverStream(t, w, newer)
	write(t, s2, data[2*PartSize+300:])
	cr := closeForCommit(t, s2)
	// The replay's tail part and a re-upload of part 3 come after the token:
	// once more, then commit.
	write(t, replay, data[2*PartSize+300:])
	persist(t, replay)
	commitAndCheck(t, env, cr, data)
}

func checkTypedCommit(t *testing.T, err, want error, cr recoverable.CommitToken) {
	t.Helper()
	checkTyped(t, err, want, recoverable.ResumeToken{Bucket: cr.Bucket, Key: cr.Key, UploadID: cr.UploadID})
}

func partLimit(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{MaxParts: 3, InlineTailMax: -1})
	data := Data(16, 3*PartSize+10)
	s := Open(t, w, bucket, "file")
	write(t, s, data[:3*PartSize])
	n, err := s.Write(data[3*PartSize:])
	if !errors.Is(err, recoverable.ErrPartLimit) || n != 0 {
		t.Fatalf("Write past the part limit = %d, %v; want 0, ErrPartLimit", n, err)
	}
	// The stream stays usable: persist, recover, and commit what fits.
	rr := persist(t, s)
	s2 := recoverStream(t, w, rr)
	if _, err := s2.Write([]byte{1}); !errors.Is(err, recoverable.ErrPartLimit) {
		t.Fatalf("recovered Write past the limit: %v, want ErrPartLimit", err)
	}
	cr := closeForCommit(t, s2)
	if cr.Parts.Count != 3 {
		t.Fatalf("%d parts, want 3", cr.Parts.Count)
	}
	commitAndCheck(t, env, cr, data[:3*PartSize])

	// A writer allowed more parts recovers a token taken at the limit (its
	// tail is a whole part) and writes on past it.
	s4 := Open(t, w, bucket, "file2")
	write(t, s4, data[:3*PartSize])
	atLimit := persist(t, s4)
	if atLimit.Tail.Len != PartSize {
		t.Fatalf("token at the limit has a %d-byte tail, want a whole part", atLimit.Tail.Len)
	}
	wide := newWriter(t, env, recoverable.Options{MaxParts: 5, InlineTailMax: -1})
	s5 := recoverStream(t, wide, atLimit)
	write(t, s5, data[3*PartSize:])
	cr5 := closeForCommit(t, s5)
	if cr5.Parts.Count != 4 {
		t.Fatalf("%d parts after writing past the old limit, want 4", cr5.Parts.Count)
	}
	commitAndCheck(t, env, cr5, data)
}

// emptyFile: a file nobody wrote to commits as a zero-byte object.
func emptyFile(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w := newWriter(t, env, recoverable.Options{})
	s := Open(t, w, bucket, "file")
	rr := persist(t, s)
	if rr.Size() != 0 || rr.Tail.Object != "" {
		t.Fatalf("empty persist: %+v", rr)
	}
	s2 := recoverStream(t, w, rr)
	commitAndCheck(t, env, closeForCommit(t, s2), []byte{})
}

func optionsChanged(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	w1 := newWriter(t, env, recoverable.Options{InlineTailMax: -1, StagingPrefix: "stage-a/"})
	data := Data(17, 3*PartSize+55)
	s := Open(t, w1, bucket, "file")
	write(t, s, data[:PartSize+200])
	rr := persist(t, s)
	w2 := newWriter(t, env, recoverable.Options{PartSize: 2 * PartSize, InlineTailMax: 64 << 10, StagingPrefix: "stage-b/", Concurrency: 3})
	s2 := recoverStream(t, w2, rr)
	if s2.PartSize() != PartSize {
		t.Fatalf("recovered part size %d, want the token's %d", s2.PartSize(), PartSize)
	}
	write(t, s2, data[PartSize+200:2*PartSize+100_000])
	rr2 := persist(t, s2)
	if rr2.StagingPrefix != "stage-a/" || !strings.HasPrefix(rr2.Tail.Object, "stage-a/") {
		t.Fatalf("second persist moved staging to %q (tail %+v)", rr2.StagingPrefix, rr2.Tail)
	}
	s3 := recoverStream(t, w2, rr2)
	write(t, s3, data[2*PartSize+100_000:])
	commitAndCheck(t, env, closeForCommit(t, s3), data)
}

func cleanup(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	ctx := context.Background()
	w := newWriter(t, env, recoverable.Options{InlineTailMax: -1})
	data := Data(18, PartSize+900)
	s := Open(t, w, bucket, "file")
	write(t, s, data[:PartSize+400])
	rr1 := persist(t, s)
	write(t, s, data[PartSize+400:])
	rr2 := persist(t, s)
	if err := w.Cleanup(ctx, rr1); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if err := w.Cleanup(ctx, rr1); err != nil {
		t.Fatalf("second Cleanup: %v", err)
	}
	if _, err := w.Recover(ctx, rr1); !errors.Is(err, recoverable.ErrSideObjectMissing) {
		t.Fatalf("recover of cleaned-up token: %v, want ErrSideObjectMissing", err)
	}
	cr, err := w.RecoverForCommit(ctx, rr2)
	if err != nil {
		t.Fatalf("RecoverForCommit of the newer token: %v", err)
	}
	commitAndCheck(t, env, cr, data)
}

func dispose(t *testing.T, env Env) {
	bucket := env.Bucket(t)
	ctx := context.Background()
	w := newWriter(t, env, recoverable.Options{})
	// Never persisted: Dispose aborts the upload.
	s := Open(t, w, bucket, "a")
	write(t, s, Data(19, PartSize+1))
	if err := s.Dispose(ctx); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	if _, err := env.Client.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: aws.String("a"), UploadId: aws.String(s.UploadID())}); !s3call.IsNoSuchUpload(err) {
		t.Fatalf("unpersisted upload still there after Dispose: %v", err)
	}
	// Persisted: Dispose leaves the upload for the token.
	s2 := Open(t, w, bucket, "b")
	data := Data(20, PartSize+2)
	write(t, s2, data)
	rr := persist(t, s2)
	write(t, s2, Data(21, 10))
	if err := s2.Dispose(ctx); err != nil {
		t.Fatalf("Dispose: %v", err)
	}
	if err := s2.Dispose(ctx); err != nil {
		t.Fatalf("second Dispose: %v", err)
	}
	if _, err := s2.Write([]byte{1}); !errors.Is(err, recoverable.ErrClosed) {
		t.Fatalf("Write after Dispose: %v, want ErrClosed", err)
	}
	cr, err := w.RecoverForCommit(ctx, rr)
	if err != nil {
		t.Fatalf("RecoverForCommit after Dispose: %v", err)
	}
	commitAndCheck(t, env, cr, data)
}

// seededChains: persist -> recover -> persist chains with random write sizes,
// against a model of what the file must hold.
func seededChains(t *testing.T, env Env) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 77))
			bucket := env.Bucket(t)
			w := newWriter(t, env, recoverable.Options{InlineTailMax: []int{-1, 512, 4096}[seed%3]})
			data := Data(100+seed, 4*PartSize+r.IntN(PartSize))
			s := Open(t, w, bucket, "file")
			pos := 0
			var tokens []recoverable.ResumeToken
			for pos < len(data) {
				n := min(len(data)-pos, 1+r.IntN(PartSize*3/2))
				write(t, s, data[pos:pos+n])
				pos += n
				switch r.IntN(4) {
				case 0: // persist and carry on
					rr := persist(t, s)
					if rr.Size() != int64(pos) || rr.CRC() != crc64nvme.Checksum(data[:pos]) {
						t.Fatalf("token describes %d bytes, model %d", rr.Size(), pos)
					}
					tokens = append(tokens, rr)
				case 1: // crash: recover from the newest or an older token
					if len(tokens) == 0 {
						continue
					}
					rr := tokens[len(tokens)-1]
					if r.IntN(3) == 0 {
						rr = tokens[r.IntN(len(tokens))]
					}
					s = recoverStream(t, w, rr)
					pos = int(rr.Size())
				}
			}
			commitAndCheck(t, env, closeForCommit(t, s), data)
		})
	}
}
