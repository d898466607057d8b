package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// TestFailedPersistKeyNeverReused: a Persist whose side-object PUT loses its
// reply fails; the next Persist succeeds; then the failed attempt's PUT lands.
// It must not land on the newer token's side object: recovery from the newer
// token is byte-exact.
func TestFailedPersistKeyNeverReused(t *testing.T) {
	const ps = streamtest.PartSize
	ctx := context.Background()
	raw := server.Client(s3test.ClientOptions{MaxAttempts: 1})
	fc := s3fault.New(raw)
	hook, arm := once(s3fault.Late)
	fc.On(s3fault.PutObject, hook)
	bucket := server.Bucket(t)
	w, err := recoverable.NewWriter(fc, recoverable.Options{PartSize: ps, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	data := streamtest.Data(90, 2*ps+7000)
	s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(p []byte) {
		t.Helper()
		if _, err := s.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	write(data[:ps+1000])
	first, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	write(data[ps+1000 : ps+2000])
	arm()
	_, err = s.Persist(ctx)
	var e *recoverable.Error
	if err == nil || !errors.As(err, &e) || e.UploadID != first.UploadID {
		t.Fatalf("persist through a lost side-object reply: %v, want a typed error", err)
	}
	faults := fc.Faults()
	if len(faults) != 1 || fc.Held() != 1 {
		t.Fatalf("%d faults, %d held requests; want 1 and 1", len(faults), fc.Held())
	}
	failedKey := faults[0].Key
	write(data[ps+2000 : ps+3000])
	newer, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newer.Tail.Object == failedKey {
		t.Fatalf("the persist after a failed one reused its side-object key %s", failedKey)
	}
	if newer.Seq <= first.Seq {
		t.Fatalf("newer token seq %d, older %d", newer.Seq, first.Seq)
	}
	// The failed attempt's PUT arrives now.
	if err := fc.ApplyLate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, raw, bucket, failedKey); !bytes.Equal(got, data[ps:ps+2000]) {
		t.Fatalf("the late PUT left %d bytes at %s, want the failed persist's tail", len(got), failedKey)
	}
	_ = s.Dispose(ctx)
	s2, err := w.Recover(ctx, newer)
	if err != nil {
		t.Fatalf("Recover from the token after the failed persist: %v", err)
	}
	if _, err := s2.Write(data[ps+3000:]); err != nil {
		t.Fatal(err)
	}
	cr, err := s2.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamtest.Complete(ctx, raw, cr); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, raw, bucket, "file"); !bytes.Equal(got, data) {
		t.Fatalf("object has %d bytes, want %d, or differs", len(got), len(data))
	}
}
