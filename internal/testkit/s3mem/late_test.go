package s3mem_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestCrashLagged: the completion is applied and the client dies; the
// upload is gone at once, the key reads empty until VisibleLag has passed
// on the server's clock, then holds the object.
func TestCrashLagged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := s3mem.New(s3mem.Options{VisibleLag: 90 * time.Second})
		bucket := f.Bucket()
		w := f.NewClient(s3mem.ClientOptions{Name: "writer"})
		other := f.NewClient(s3mem.ClientOptions{})
		up, err := w.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String("k")})
		if err != nil {
			t.Fatal(err)
		}
		p, err := w.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: aws.String("k"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("tail"))})
		if err != nil {
			t.Fatal(err)
		}
		f.Inject(s3mem.Fault{Op: s3fault.CompleteMultipartUpload, Kind: s3mem.CrashLagged})
		_, err = w.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: aws.String("k"), UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}}})
		if !errors.Is(err, s3mem.ErrCrashed) || !f.Crashed("writer") {
			t.Fatalf("lagged completion: %v, want the client crashed", err)
		}
		if _, err := other.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: aws.String("k"), UploadId: up.UploadId}); code(err) != "NoSuchUpload" {
			t.Fatalf("ListParts after the completion: %v, want NoSuchUpload", err)
		}
		time.Sleep(89 * time.Second)
		if exists(t, other, bucket, "k") {
			t.Fatal("the object showed before VisibleLag")
		}
		time.Sleep(time.Second)
		if !exists(t, other, bucket, "k") {
			t.Fatal("the object did not show after VisibleLag")
		}
	})
}

// TestLateLandsBehindTheNextPut: a PUT that meets Late is answered 500 and
// not applied; it lands right after the same client's next applied PUT, and
// replaces that PUT's object when the key is the same.
func TestLateLandsBehindTheNextPut(t *testing.T) {
	ctx := context.Background()
	f := s3mem.New(s3mem.Options{})
	bucket := f.Bucket()
	w := f.NewClient(s3mem.ClientOptions{Name: "writer"})
	other := f.NewClient(s3mem.ClientOptions{})
	put := func(c *s3.Client, body string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader([]byte(body))})
		return err
	}
	f.Inject(s3mem.Fault{Op: s3fault.PutObject, Kind: s3mem.Late})
	if err := put(w, "old"); code(err) != "InternalError" {
		t.Fatalf("late put: %v, want 500 InternalError", err)
	}
	if exists(t, other, bucket, "k") {
		t.Fatal("the late put was applied at once")
	}
	if err := put(other, "another client's"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, other, bucket, "k"); got != "another client's" {
		t.Fatalf("another client's put made the late one land: %q", got)
	}
	if err := put(w, "new"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, other, bucket, "k"); got != "old" {
		t.Fatalf("after the next put the key holds %q, want the late %q", got, "old")
	}
}

func read(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
