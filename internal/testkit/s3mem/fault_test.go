package s3mem_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

func exists(t *testing.T, c *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		return true
	}
	if code(err) != "NotFound" {
		t.Fatalf("HEAD %s: %v", key, err)
	}
	return false
}

// TestCrashBeforeSendIsFinal: the crashed client's request never arrives,
// and nothing it sends later arrives either; other clients go on.
func TestCrashBeforeSendIsFinal(t *testing.T) {
	f := s3mem.New(s3mem.Options{})
	bucket := f.Bucket()
	w := f.NewClient(s3mem.ClientOptions{Name: "writer", MaxAttempts: 3})
	other := f.NewClient(s3mem.ClientOptions{})
	f.Inject(s3mem.Fault{Op: s3fault.PutObject, Key: "a", Kind: s3mem.CrashBeforeSend})
	_, err := w.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("a"), Body: bytes.NewReader([]byte("x"))})
	if !errors.Is(err, s3mem.ErrCrashed) {
		t.Fatalf("crashed put: %v, want ErrCrashed", err)
	}
	if exists(t, other, bucket, "a") {
		t.Fatal("a request crashed before sending was applied")
	}
	if !f.Crashed("writer") {
		t.Fatal("writer not marked crashed")
	}
	_, err = w.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("b"), Body: bytes.NewReader([]byte("y"))})
	if !errors.Is(err, s3mem.ErrCrashed) || exists(t, other, bucket, "b") {
		t.Fatalf("a crashed client's later put: %v", err)
	}
	calls := f.Calls()
	var dead, writer int
	for _, c := range calls {
		if c.Client == "writer" {
			writer++
			if c.Dead {
				dead++
			}
		}
	}
	// One call crashed, one went nowhere; the SDK retried neither.
	if writer != 2 || dead != 1 || calls[0].Fault != s3mem.CrashBeforeSend || calls[0].Applied {
		t.Fatalf("call log %+v", calls)
	}
}

// TestCrashAfterApply: the server applies the request; the client never hears.
func TestCrashAfterApply(t *testing.T) {
	f := s3mem.New(s3mem.Options{})
	bucket := f.Bucket()
	w := f.NewClient(s3mem.ClientOptions{Name: "w"})
	other := f.NewClient(s3mem.ClientOptions{})
	out, err := w.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.UploadPart(context.Background(), &s3.UploadPartInput{Bucket: &bucket, Key: aws.String("k"), UploadId: out.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("hello"))})
	if err != nil {
		t.Fatal(err)
	}
	f.Inject(s3mem.Fault{Op: s3fault.CompleteMultipartUpload, Client: "w", Kind: s3mem.CrashAfterApply})
	_, err = w.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: aws.String("k"), UploadId: out.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}}})
	if !errors.Is(err, s3mem.ErrCrashed) {
		t.Fatalf("complete: %v, want ErrCrashed", err)
	}
	if got := s3test.Object(t, other, bucket, "k"); string(got) != "hello" {
		t.Fatalf("object %q, want the completed upload", got)
	}
	if _, err := w.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")}); !errors.Is(err, s3mem.ErrCrashed) {
		t.Fatalf("a crashed client still reaches the server: %v", err)
	}
}

// TestTransientErrorsRetriedBySDK: 503 SlowDown and 500 InternalError are
// answered unapplied, and the SDK's own retryer, sleeping in fake time,
// gets through on the third attempt.
func TestTransientErrorsRetriedBySDK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := s3mem.New(s3mem.Options{})
		bucket := f.Bucket()
		c := f.NewClient(s3mem.ClientOptions{MaxAttempts: 3})
		f.Inject(s3mem.Fault{Op: s3fault.PutObject, Attempt: 1, Kind: s3mem.SlowDown})
		f.Inject(s3mem.Fault{Op: s3fault.PutObject, Attempt: 2, Kind: s3mem.InternalError})
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader([]byte("v"))}); err != nil {
			t.Fatalf("put with two transient failures and three attempts: %v", err)
		}
		var got []string
		for _, c := range f.Calls() {
			if c.Op == s3fault.PutObject {
				got = append(got, c.Fault.String()+"/"+http.StatusText(c.Status))
			}
		}
		if want := "[slowdown/Service Unavailable internal-error/Internal Server Error kind(0)/OK]"; want != "["+join(got)+"]" {
			t.Fatalf("attempts %v, want %s", got, want)
		}
		// Without retries the error is the SDK's, with S3's code.
		f.Inject(s3mem.Fault{Op: s3fault.HeadObject, Kind: s3mem.SlowDown})
		_, err := f.NewClient(s3mem.ClientOptions{}).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
		if status(err) != 503 {
			t.Fatalf("HEAD with SlowDown: %v, want a 503", err)
		}
	})
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}

// TestHangUntilContextDone: a hung call returns exactly when its context
// ends (in fake time), unapplied; HangAfterApply applies it first.
func TestHangUntilContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := s3mem.New(s3mem.Options{})
		bucket := f.Bucket()
		c := f.NewClient(s3mem.ClientOptions{})
		f.Inject(s3mem.Fault{Op: s3fault.PutObject, Key: "a", Kind: s3mem.Hang})
		f.Inject(s3mem.Fault{Op: s3fault.PutObject, Key: "b", Kind: s3mem.HangAfterApply})
		for _, key := range []string{"a", "b"} {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: bytes.NewReader([]byte("v"))})
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 30*time.Second {
				t.Fatalf("hung put of %s: %v after %v, want the deadline after 30s", key, err, time.Since(start))
			}
		}
		if exists(t, c, bucket, "a") || !exists(t, c, bucket, "b") {
			t.Fatal("Hang applied its request, or HangAfterApply did not")
		}
	})
}

// TestGateConflict: two conditional completions of one key held at the
// server at once: the one applied first meets 409 ConditionalRequestConflict,
// the other creates the object.
func TestGateConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		held := map[string]chan struct{}{} // by upload ID
		f := s3mem.New(s3mem.Options{Gate: func(ctx context.Context, c s3mem.Call) (s3mem.Kind, error) {
			if c.Op != s3fault.CompleteMultipartUpload {
				return 0, nil
			}
			ch := make(chan struct{})
			mu.Lock()
			held[c.UploadID] = ch
			mu.Unlock()
			select {
			case <-ch:
				return 0, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}})
		bucket := f.Bucket()
		c := f.NewClient(s3mem.ClientOptions{})
		errs := make([]error, 2)
		ids := make([]string, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			m := newMPU(t, c, bucket, "k")
			ids[i] = m.id
			m.part(1, []byte{byte('a' + i)})
			wg.Go(func() {
				errs[i] = m.complete(func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") })
			})
		}
		synctest.Wait()
		mu.Lock()
		if len(held) != 2 {
			t.Fatalf("%d completions held, want 2", len(held))
		}
		a, b := held[ids[0]], held[ids[1]]
		mu.Unlock()
		close(b) // applied first, while a is still in flight: 409
		synctest.Wait()
		close(a)
		wg.Wait()
		var conflicts, ok int
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case code(err) == "ConditionalRequestConflict" && status(err) == 409:
				conflicts++
			default:
				t.Fatalf("completion: %v", err)
			}
		}
		if ok != 1 || conflicts != 1 || f.Conflicts() != 1 {
			t.Fatalf("%d created, %d conflicts (%d counted), want one each", ok, conflicts, f.Conflicts())
		}
		if got := s3test.Object(t, c, bucket, "k"); string(got) != "a" {
			t.Fatalf("object %q, want upload a's, released last", got)
		}
	})
}

// TestServerClock: Date headers and LastModified follow the settable clock.
func TestServerClock(t *testing.T) {
	f := s3mem.New(s3mem.Options{})
	bucket := f.Bucket()
	c := f.NewClient(s3mem.ClientOptions{})
	t0 := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	f.SetClock(t0)
	put(t, c, bucket, "k", []byte("v"))
	f.Advance(time.Hour)
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := awsmiddleware.GetServerTime(out.ResultMetadata); !ok || !st.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Date %v, want %v", st, t0.Add(time.Hour))
	}
	if lm := aws.ToTime(out.Contents[0].LastModified); !lm.Equal(t0) {
		t.Fatalf("LastModified %v, want %v", lm, t0)
	}
}

// TestRandomETags: under the switch, ETags are not MD5s, and uploads still
// complete with them.
func TestRandomETags(t *testing.T) {
	f := s3mem.New(s3mem.Options{RandomETags: true})
	bucket := f.Bucket()
	c := f.NewClient(s3mem.ClientOptions{})
	m := newMPU(t, c, bucket, "k")
	body := data(1, 100)
	m.part(1, body)
	sum := md5.Sum(body)
	if md := `"` + hex.EncodeToString(sum[:]) + `"`; aws.ToString(m.parts[0].ETag) == md {
		t.Fatalf("part ETag %s is the MD5", md)
	}
	if err := m.complete(nil); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, c, bucket, "k"); !bytes.Equal(got, body) {
		t.Fatal("object differs")
	}
}

// TestLifecycleNotImplemented: the switch for servers without lifecycle rules.
func TestLifecycleNotImplemented(t *testing.T) {
	f := s3mem.New(s3mem.Options{LifecycleNotImplemented: true})
	bucket := f.Bucket()
	_, err := f.NewClient(s3mem.ClientOptions{}).GetBucketLifecycleConfiguration(context.Background(), &s3.GetBucketLifecycleConfigurationInput{Bucket: &bucket})
	if code(err) != "NotImplemented" || status(err) != 501 {
		t.Fatalf("lifecycle: %v, want 501 NotImplemented", err)
	}
}

// TestUnsupportedOperation: anything outside the modelled calls is refused
// loudly, never half-served.
func TestUnsupportedOperation(t *testing.T) {
	f := s3mem.New(s3mem.Options{})
	bucket := f.Bucket()
	_, err := f.NewClient(s3mem.ClientOptions{}).GetObjectTagging(context.Background(), &s3.GetObjectTaggingInput{Bucket: &bucket, Key: aws.String("k")})
	if code(err) != "NotImplemented" {
		t.Fatalf("tagging: %v, want NotImplemented", err)
	}
	_, err = f.NewClient(s3mem.ClientOptions{}).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("nope"), Key: aws.String("k")})
	if status(err) != 404 {
		t.Fatalf("missing bucket: %v, want 404", err)
	}
}
