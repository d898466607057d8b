package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// lateReupload plays a stalled part upload that lands late, on a bucket whose
// ETags change with every upload (SSE-KMS) when randomETags is set: the stream
// breaks on part 2; the process dies; a new one recovers from the token before
// part 2, uploads part 2 again (same bytes), persists and dies; then the
// stalled upload of part 2 lands, giving the part a third ETag under SSE-KMS.
// It returns the token taken after the re-upload, the client and the file's
// bytes.
func lateReupload(t *testing.T, o recoverable.Options, randomETags bool) (recoverable.ResumeToken, *s3fault.Client, []byte) {
	t.Helper()
	const ps = streamtest.PartSize
	ctx := context.Background()
	fc := s3fault.New(server.Client(s3test.ClientOptions{MaxAttempts: 1}))
	if randomETags {
		fc.RandomETags()
	}
	hook, arm := once(s3fault.Late)
	fc.On(s3fault.UploadPart, hook)
	bucket := server.Bucket(t)
	o.PartSize, o.InlineTailMax = ps, -1
	newWriter := func() *recoverable.Writer {
		w, err := recoverable.NewWriter(fc, o)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	data := streamtest.Data(95, 3*ps+4000)
	s, err := newWriter().Open(ctx, bucket, "file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(data[:ps+100]); err != nil {
		t.Fatal(err)
	}
	before, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	arm()
	_, err = s.Write(data[ps+100 : 2*ps+200])
	if err == nil {
		_, err = s.Persist(ctx)
	}
	if err == nil {
		t.Fatal("write and persist succeeded through a lost part reply")
	}
	if fc.Held() != 1 {
		t.Fatalf("%d requests held, want the part upload", fc.Held())
	}
	_ = s.Dispose(ctx)

	s2, err := newWriter().Recover(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(data[ps+100 : 2*ps+200]); err != nil {
		t.Fatal(err)
	}
	after, err := s2.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Parts.Count != 2 {
		t.Fatalf("token after the re-upload lists %d parts, want 2", after.Parts.Count)
	}
	// The process dies; the stalled upload of part 2 lands.
	if err := fc.ApplyLate(ctx); err != nil {
		t.Fatal(err)
	}
	return after, fc, data
}

// TestLateReuploadRecovers: after a part's late re-upload with the same bytes
// (a new ETag), the token still recovers, in a new process, and the committer
// commits the file byte-exact.
func TestLateReuploadRecovers(t *testing.T) {
	ctx := context.Background()
	rr, fc, data := lateReupload(t, recoverable.Options{}, true)
	w, err := recoverable.NewWriter(fc, recoverable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Recover(ctx, rr)
	if err != nil {
		t.Fatalf("Recover after a part was uploaded again with the same bytes: %v", err)
	}
	if _, err := s.Write(data[rr.Size():]); err != nil {
		t.Fatal(err)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := committer.New(fc, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The committer sees what it would on SSE-KMS: ETags that are not MD5s.
	if pf, err := c.Preflight(ctx, rr.Bucket, rr.StagingPrefix); err != nil || pf.ETagsAreMD5 {
		t.Fatalf("preflight through random ETags: %+v, %v; want ETags found not to be MD5s", pf, err)
	}
	if _, err := c.CommitAfterRecovery(ctx, cr); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := s3test.Object(t, fc, rr.Bucket, rr.Key); !bytes.Equal(got, data) {
		t.Fatalf("object has %d bytes, want %d, or differs", len(got), len(data))
	}
}

// TestLateReuploadWithoutChecksums: with DisableChecksums the server lists no
// part checksums, and a part's ETag is all there is to recognise it by. On a
// bucket whose ETags are not digests of the bytes, a part uploaded again is
// then indistinguishable from one overwritten with other bytes: recovery
// refuses it loudly, with a typed ErrPartsChanged, and never goes on with
// bytes it cannot vouch for.
func TestLateReuploadWithoutChecksums(t *testing.T) {
	rr, fc, _ := lateReupload(t, recoverable.Options{DisableChecksums: true}, true)
	w, err := recoverable.NewWriter(fc, recoverable.Options{DisableChecksums: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Recover(context.Background(), rr)
	var e *recoverable.Error
	if !errors.Is(err, recoverable.ErrPartsChanged) || !errors.As(err, &e) || e.UploadID != rr.UploadID {
		t.Fatalf("Recover without part checksums after a re-upload: %v, want a typed ErrPartsChanged", err)
	}
}

// TestLateReuploadWithoutChecksumsMD5: without checksums on a bucket whose
// ETags are MD5s, the ETags recognise a part uploaded again with the same
// bytes, and the token recovers.
func TestLateReuploadWithoutChecksumsMD5(t *testing.T) {
	ctx := context.Background()
	rr, fc, data := lateReupload(t, recoverable.Options{DisableChecksums: true}, false)
	w, err := recoverable.NewWriter(fc, recoverable.Options{DisableChecksums: true})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := w.RecoverForCommit(ctx, rr)
	if err != nil {
		t.Fatalf("RecoverForCommit: %v", err)
	}
	c, err := committer.New(fc, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitAfterRecovery(ctx, cr); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := s3test.Object(t, fc, rr.Bucket, rr.Key); !bytes.Equal(got, data[:rr.Size()]) {
		t.Fatalf("object has %d bytes, want %d, or differs", len(got), rr.Size())
	}
}
