package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// TestHostileTailObject: a token whose tail names a key outside its upload's
// side-object folder (here a table of the warehouse) is refused by Validate,
// Cleanup and Recover, and the object survives on the server.
func TestHostileTailObject(t *testing.T) {
	c := server.Client(s3test.ClientOptions{})
	bucket := server.Bucket(t)
	ctx := context.Background()
	const victim = "warehouse/orders.parquet"
	body := []byte("precious table bytes\n")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(victim), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, bucket, "events/f", recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(body) // same length and CRC as the victim: only the key check stops it
	rr, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Tail.Object == "" {
		t.Fatal("the tail did not go to a side object")
	}
	if err := rr.Validate(); err != nil {
		t.Fatalf("a token the stream made: %v", err)
	}

	hostile := []recoverable.ResumeToken{rr, rr, rr, rr}
	hostile[0].Tail.Object = victim
	hostile[1].StagingPrefix, hostile[1].Tail.Object = "warehouse", victim // prefix moved along
	hostile[2].Tail.Object = recoverable.SideObjectPrefix(rr.StagingPrefix, rr.UploadID) + "../../../" + victim
	hostile[3].Tail.Object = recoverable.SideObjectPrefix(rr.StagingPrefix, "other-upload") + strings.TrimPrefix(rr.Tail.Object, recoverable.SideObjectPrefix(rr.StagingPrefix, rr.UploadID))
	for i, h := range hostile {
		if err := h.Validate(); !errors.Is(err, recoverable.ErrInvalidToken) {
			t.Errorf("%d: Validate(tail %q, staging %q) = %v, want ErrInvalidToken", i, h.Tail.Object, h.StagingPrefix, err)
		}
		if err := w.Cleanup(ctx, h); !errors.Is(err, recoverable.ErrInvalidToken) {
			t.Errorf("%d: Cleanup = %v, want ErrInvalidToken", i, err)
		}
		if _, err := w.Recover(ctx, h); !errors.Is(err, recoverable.ErrInvalidToken) {
			t.Errorf("%d: Recover = %v, want ErrInvalidToken", i, err)
		}
	}
	if got := s3test.Object(t, c, bucket, victim); !bytes.Equal(got, body) {
		t.Fatalf("%s holds %q after hostile tokens, want its bytes", victim, got)
	}

	// A writer configured with another staging prefix refuses to clean up
	// the token's side object, and says why.
	other, _ := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, StagingPrefix: "elsewhere/"})
	err = other.Cleanup(ctx, rr)
	var e *recoverable.Error
	if !errors.Is(err, recoverable.ErrForeignStaging) || !errors.As(err, &e) || e.Hint == "" {
		t.Fatalf("Cleanup under another staging prefix = %v, want a typed ErrForeignStaging with a hint", err)
	}
	if len(s3test.Keys(t, c, bucket, rr.Tail.Object)) != 1 {
		t.Fatal("the side object is gone after a refused clean-up")
	}
	// The genuine token still recovers and cleans up.
	if _, err := w.Recover(ctx, rr); err != nil {
		t.Fatalf("Recover of the genuine token: %v", err)
	}
	if err := w.Cleanup(ctx, rr); err != nil {
		t.Fatalf("Cleanup of the genuine token: %v", err)
	}
	if len(s3test.Keys(t, c, bucket, rr.Tail.Object)) != 0 {
		t.Fatal("the side object survived its clean-up")
	}
	_ = s.Dispose(ctx)
}
