package recoverable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// once returns a hook that fails the first call after it is armed, once.
func once(k s3fault.Kind) (s3fault.Hook, func()) {
	var armed, fired atomic.Bool
	return func(s3fault.Call) s3fault.Kind {
			if armed.Load() && fired.CompareAndSwap(false, true) {
				return k
			}
			return s3fault.None
		}, func() {
			armed.Store(true)
		}
}

// TestFaults injects each fault (request never sent, response lost after the
// server applied it, 503 SlowDown, timeout) into each S3 call a stream makes,
// with the SDK's own retries off so the fault reaches the stream. The call that
// meets the fault returns an error (never a silently shorter file), and the file
// is still written byte-exact from the last good token.
func TestFaults(t *testing.T) {
	const ps = streamtest.PartSize
	data := streamtest.Data(60, 3*ps+4321)
	cut1, cut2 := ps+1000, 2*ps+3000
	for _, op := range []s3fault.Op{s3fault.CreateMultipartUpload, s3fault.UploadPart, s3fault.PutObject, s3fault.ListParts, s3fault.GetObject} {
		for _, kind := range s3fault.Kinds {
			t.Run(fmt.Sprintf("%s/%s", op, kind), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				raw := server.Client(s3test.ClientOptions{MaxAttempts: 1})
				fc := s3fault.New(raw)
				hook, arm := once(kind)
				fc.On(op, hook)
				bucket := server.Bucket(t)
				w, err := recoverable.NewWriter(fc, recoverable.Options{PartSize: ps, Concurrency: 2, InlineTailMax: -1})
				if err != nil {
					t.Fatal(err)
				}
				if op == s3fault.CreateMultipartUpload {
					arm()
					if _, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{}); err == nil {
						t.Fatal("Open succeeded through a failed CreateMultipartUpload")
					}
				}
				s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				write := func(s *recoverable.Stream, p []byte) error {
					_, err := s.Write(p)
					return err
				}
				if err := write(s, data[:cut1]); err != nil {
					t.Fatal(err)
				}
				good, err := s.Persist(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if op == s3fault.UploadPart || op == s3fault.PutObject {
					arm()
					err := write(s, data[cut1:cut2])
					if err == nil {
						_, err = s.Persist(ctx)
					}
					if err == nil {
						t.Fatalf("write and persist succeeded through a failed %s", op)
					}
					var e *recoverable.Error
					if !errors.As(err, &e) || e.UploadID != good.UploadID {
						t.Fatalf("error %v does not name the upload", err)
					}
				}
				if op == s3fault.ListParts || op == s3fault.GetObject {
					arm()
					if _, err := w.Recover(ctx, good); err == nil {
						t.Fatalf("Recover succeeded through a failed %s", op)
					}
				}
				// The last good token still works.
				s2, err := w.Recover(ctx, good)
				if err != nil {
					t.Fatalf("Recover from the last good token: %v", err)
				}
				if err := write(s2, data[cut1:]); err != nil {
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
				if len(fc.Faults()) != 1 {
					t.Fatalf("%d faults injected, want 1", len(fc.Faults()))
				}
			})
		}
	}
}

// stalling never answers the first `stalls` calls of UploadPart, PutObject and
// GetObject: the connection stays open and silent until the caller gives up.
type stalling struct {
	*s3.Client
	stalls int32
	calls  atomic.Int32
}

func (c *stalling) stall(ctx context.Context) error {
	if c.calls.Add(1) <= c.stalls {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (c *stalling) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if err := c.stall(ctx); err != nil {
		return nil, err
	}
	return c.Client.UploadPart(ctx, in, opts...)
}

func (c *stalling) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := c.stall(ctx); err != nil {
		return nil, err
	}
	return c.Client.PutObject(ctx, in, opts...)
}

func (c *stalling) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := c.stall(ctx); err != nil {
		return nil, err
	}
	return c.Client.GetObject(ctx, in, opts...)
}

// TestStalledCalls: a call that gets no answer is abandoned after CallTimeout
// and made again; the file is still exact. A server that never answers gives
// a typed ErrCallTimeout instead of a hang. The calls that are not stalled
// must finish within CallTimeout (a part of 5 MiB, under the race detector,
// on a loaded machine), so it is a second and more.
func TestStalledCalls(t *testing.T) {
	const ps = streamtest.PartSize
	ctx := context.Background()
	data := streamtest.Data(80, ps+200_000)
	for _, stalls := range []int32{1, 2} {
		t.Run(fmt.Sprintf("stalls=%d", stalls), func(t *testing.T) {
			c := &stalling{Client: server.Client(s3test.ClientOptions{}), stalls: stalls}
			bucket := server.Bucket(t)
			w, _ := recoverable.NewWriter(c, recoverable.Options{PartSize: ps, InlineTailMax: -1, CallTimeout: 1500 * time.Millisecond})
			s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(data); err != nil {
				t.Fatal(err)
			}
			rr, err := s.Persist(ctx) // the part, then the side object
			if err != nil {
				t.Fatalf("persist through %d stalled calls: %v", stalls, err)
			}
			c.calls.Store(0) // stall again: now the side object's GetObject
			cr, err := w.RecoverForCommit(ctx, rr)
			if err != nil {
				t.Fatalf("recover through %d stalled calls: %v", stalls, err)
			}
			if err := streamtest.Complete(ctx, c.Client, cr); err != nil {
				t.Fatal(err)
			}
			if got := s3test.Object(t, c.Client, bucket, "file"); !bytes.Equal(got, data) {
				t.Fatal("object differs")
			}
		})
	}
	t.Run("never answers", func(t *testing.T) {
		c := &stalling{Client: server.Client(s3test.ClientOptions{}), stalls: 1 << 30}
		bucket := server.Bucket(t)
		w, _ := recoverable.NewWriter(c, recoverable.Options{PartSize: ps, CallTimeout: time.Second})
		s, err := w.Open(ctx, bucket, "file", recoverable.ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Write(data)
		_, err = s.Persist(ctx)
		var e *recoverable.Error
		if !errors.Is(err, recoverable.ErrCallTimeout) || !errors.As(err, &e) || e.UploadID == "" {
			t.Fatalf("persist against a silent server: %v, want a typed ErrCallTimeout", err)
		}
	})
}
