package s3fault_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// The wrapper must stand in for the recoverable package's client interface.
var _ recoverable.S3 = (*s3fault.Client)(nil)

func exists(t *testing.T, c *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		return true
	}
	if s3call.IsNotFound(err) {
		return false
	}
	t.Fatalf("head %s: %v", key, err)
	return false
}

func TestKinds(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	real := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	for _, k := range s3fault.Kinds {
		t.Run(k.String(), func(t *testing.T) {
			f := s3fault.New(real)
			f.On(s3fault.PutObject, s3fault.Nth(1, k))
			key := "obj-" + k.String()
			_, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("x")})
			if err == nil {
				t.Fatal("no error injected")
			}
			if !s3fault.IsInjected(err) {
				t.Fatalf("not marked injected: %v", err)
			}
			if got := exists(t, real, b, key); got != k.Applied() {
				t.Fatalf("object exists=%v, want %v (applied)", got, k.Applied())
			}
			switch k {
			case s3fault.BeforeSend, s3fault.LostResponse:
				var se *smithyhttp.RequestSendError
				var ne net.Error
				if !errors.As(err, &se) || !errors.As(err, &ne) {
					t.Fatalf("want a connection error, got %v", err)
				}
			case s3fault.SlowDown:
				if s3call.APICode(err) != "SlowDown" || s3call.HTTPStatus(err) != 503 {
					t.Fatalf("want 503 SlowDown, got code %q status %d", s3call.APICode(err), s3call.HTTPStatus(err))
				}
			case s3fault.Timeout:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("want a deadline error, got %v", err)
				}
			}
			// The second call goes through.
			if _, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("y")}); err != nil {
				t.Fatal(err)
			}
			calls := f.Calls()
			if len(calls) != 2 || calls[0].Fault != k || calls[1].Fault != s3fault.None || calls[0].Err == nil || calls[1].Err != nil {
				t.Fatalf("call log %+v", calls)
			}
			if calls[0].Bucket != b || calls[0].Key != key || calls[0].Seq != 1 || calls[1].N != 2 {
				t.Fatalf("call log fields %+v", calls[0])
			}
		})
	}
}

func TestGetObjectLostResponseClosesBody(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	real := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	if _, err := real.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: bytes.NewReader([]byte("data"))}); err != nil {
		t.Fatal(err)
	}
	f := s3fault.New(real)
	f.On(s3fault.GetObject, s3fault.FirstN(5, s3fault.LostResponse))
	for i := 0; i < 5; i++ {
		if _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")}); err == nil {
			t.Fatal("no error injected")
		}
	}
	out, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "data" {
		t.Fatalf("got %q", got)
	}
	if f.Count(s3fault.GetObject) != 6 || len(f.Faults()) != 5 {
		t.Fatalf("count %d faults %d", f.Count(s3fault.GetObject), len(f.Faults()))
	}
}

func TestHooksOrderAndConcurrency(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	real := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	f := s3fault.New(real)
	f.OnAny(s3fault.AtSeq(3, s3fault.SlowDown))
	f.On(s3fault.HeadObject, s3fault.Always(s3fault.BeforeSend))
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = f.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &b})
		}()
	}
	wg.Wait()
	_, err := f.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &b, Key: aws.String("x")})
	if s3call.IsNotFound(err) || !s3fault.IsInjected(err) {
		t.Fatalf("per-operation hook did not win: %v", err)
	}
	faults := f.Faults()
	if len(faults) != 2 || faults[0].Seq != 3 || faults[0].Fault != s3fault.SlowDown || faults[1].Op != s3fault.HeadObject {
		t.Fatalf("faults %+v", faults)
	}
	f.ClearHooks()
	if _, err := f.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	// A nil input does not panic in the wrapper.
	_, _ = f.ListObjectsV2(context.Background(), nil)
}

// Every operation is wrapped: a fault reaches the caller and the log names it.
func TestEveryOperationIsWrapped(t *testing.T) {
	// BeforeSend never reaches the inner client, which points nowhere.
	f := s3fault.New(s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1")}))
	f.OnAny(s3fault.Always(s3fault.BeforeSend))
	ctx := context.Background()
	b, k := aws.String("b"), aws.String("k")
	calls := map[s3fault.Op]func() error{
		s3fault.CreateMultipartUpload: func() error {
			_, err := f.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
			return err
		},
		s3fault.UploadPart: func() error { _, err := f.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k}); return err },
		s3fault.ListParts:  func() error { _, err := f.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k}); return err },
		s3fault.AbortMultipartUpload: func() error {
			_, err := f.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k})
			return err
		},
		s3fault.CompleteMultipartUpload: func() error {
			_, err := f.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k})
			return err
		},
		s3fault.ListMultipartUploads: func() error {
			_, err := f.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
			return err
		},
		s3fault.PutObject:     func() error { _, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k}); return err },
		s3fault.GetObject:     func() error { _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k}); return err },
		s3fault.HeadObject:    func() error { _, err := f.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k}); return err },
		s3fault.DeleteObject:  func() error { _, err := f.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k}); return err },
		s3fault.DeleteObjects: func() error { _, err := f.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b}); return err },
		s3fault.ListObjectsV2: func() error { _, err := f.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b}); return err },
		s3fault.GetBucketLifecycleConfiguration: func() error {
			_, err := f.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: b})
			return err
		},
	}
	if len(calls) != len(s3fault.Ops) {
		t.Fatalf("test covers %d operations, the package wraps %d", len(calls), len(s3fault.Ops))
	}
	for _, op := range s3fault.Ops {
		err := calls[op]()
		var fe *s3fault.Error
		if !errors.As(err, &fe) || fe.Op != op || fe.Kind != s3fault.BeforeSend {
			t.Errorf("%s: %v", op, err)
		}
		log := f.Calls()
		if last := log[len(log)-1]; last.Op != op || last.Bucket != "b" || last.Err == nil {
			t.Errorf("%s logged as %+v", op, last)
		}
	}
}

// A Late request fails at once, reaches the server only at ApplyLate, and
// carries the body it had when it was made, whatever the caller did with its
// buffer since.
func TestLate(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	real := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	f := s3fault.New(real)
	f.On(s3fault.PutObject, s3fault.Nth(1, s3fault.Late))
	buf := []byte("first")
	_, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: bytes.NewReader(buf)})
	var fe *s3fault.Error
	var ne net.Error
	if !errors.As(err, &fe) || fe.Kind != s3fault.Late || !errors.As(err, &ne) {
		t.Fatalf("late call returned %v, want an injected connection error", err)
	}
	if exists(t, real, b, "k") || f.Held() != 1 {
		t.Fatalf("late request applied before ApplyLate (held %d)", f.Held())
	}
	copy(buf, "XXXXX") // the caller reuses its buffer
	if _, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("second")}); err != nil {
		t.Fatal(err)
	}
	if err := f.ApplyLate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, real, b, "k"); string(got) != "first" {
		t.Fatalf("after ApplyLate the key holds %q, want the late request's %q", got, "first")
	}
	if f.Held() != 0 {
		t.Fatalf("%d requests still held", f.Held())
	}
	if err := f.ApplyLate(ctx); err != nil {
		t.Fatalf("second ApplyLate: %v", err)
	}
}

// RandomETags: uploading a part's bytes again gives it another ETag;
// ListParts shows the latest; completion takes only the latest.
func TestRandomETags(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	real := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	f := s3fault.New(real)
	f.RandomETags()
	key := aws.String("obj")
	up, err := f.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	part := func() string {
		t.Helper()
		out, err := f.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: key, UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("same bytes")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	first, second := part(), part()
	if first == second {
		t.Fatalf("the same bytes uploaded twice got the same ETag %s", first)
	}
	listed, err := f.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: key, UploadId: up.UploadId})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.Parts) != 1 || aws.ToString(listed.Parts[0].ETag) != second {
		t.Fatalf("listed %+v, want part 1 with ETag %s", listed.Parts, second)
	}
	complete := func(etag string) error {
		_, err := f.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(etag)}}}})
		return err
	}
	if err := complete(first); s3call.APICode(err) != "InvalidPart" {
		t.Fatalf("completion with a superseded ETag: %v, want InvalidPart", err)
	}
	if err := complete(second); err != nil {
		t.Fatalf("completion with the latest ETag: %v", err)
	}
	if got := s3test.Object(t, real, b, "obj"); string(got) != "same bytes" {
		t.Fatalf("object holds %q", got)
	}

	// Objects: the same bytes written twice get two ETags, neither the MD5;
	// HEAD, GET and listings show the latest, and If-Match takes only it.
	put := func() string {
		t.Helper()
		out, err := f.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("plain"), Body: strings.NewReader("x")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	old, latest := put(), put()
	sum := md5.Sum([]byte("x"))
	if old == latest || strings.Trim(latest, `"`) == hex.EncodeToString(sum[:]) {
		t.Fatalf("object ETags %s then %s: want two, neither the MD5", old, latest)
	}
	head, err := f.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("plain"), IfMatch: aws.String(latest)})
	if err != nil || aws.ToString(head.ETag) != latest {
		t.Fatalf("HEAD If-Match the latest ETag: %v, ETag %s; want %s", err, aws.ToString(head.ETag), latest)
	}
	if _, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("plain"), IfMatch: aws.String(old)}); s3call.HTTPStatus(err) != 412 {
		t.Fatalf("GET If-Match a superseded ETag: %v, want 412", err)
	}
	get, err := f.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("plain"), IfMatch: aws.String(latest)})
	if err != nil {
		t.Fatalf("GET If-Match the latest ETag: %v", err)
	}
	get.Body.Close()
	if aws.ToString(get.ETag) != latest {
		t.Fatalf("GET shows ETag %s, want %s", aws.ToString(get.ETag), latest)
	}
	list, err := f.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("plain")})
	if err != nil || len(list.Contents) != 1 || aws.ToString(list.Contents[0].ETag) != latest {
		t.Fatalf("listing %v, %+v; want one object with ETag %s", err, list, latest)
	}
	head, err = f.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("obj")})
	if err != nil || strings.Trim(aws.ToString(head.ETag), `"`) == strings.Trim(aws.ToString(serverETag(t, real, b, "obj")), `"`) {
		t.Fatalf("completed object shows the server's ETag (%v)", err)
	}
}

// serverETag returns the server's own ETag of an object.
func serverETag(t *testing.T, c *s3.Client, bucket, key string) *string {
	t.Helper()
	out, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	return out.ETag
}
