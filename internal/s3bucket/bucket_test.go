package s3bucket_test

// The general bucket operations: Lookup, ReadObject, PutOnce and List, on
// the real server, with the edge cases the sink's barrier, markers and
// manifests and s3once verify meet.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// mustName fails unless err is an error whose message names every one of
// the given strings (bucket, key, upload ...).
func mustName(t *testing.T, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one naming %q", names)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error does not name %q: %v", n, err)
		}
	}
}

// resetErr is what reading a body gives when the connection is reset.
func resetErr() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// cutBody fails with a connection reset once left bytes have been read.
type cutBody struct {
	io.ReadCloser
	left int
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, resetErr()
	}
	if len(p) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= n
	return n, err
}

// gets wraps a client's GetObject: it records each call's If-Match, runs
// before (when set) ahead of the n-th call (from 1), and cuts the n-th
// reply's body short after cut(n) bytes when that is >= 0.
type gets struct {
	s3bucket.API
	before func(n int)
	cut    func(n int) int

	mu      sync.Mutex
	ifMatch []string
}

func (g *gets) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	g.mu.Lock()
	g.ifMatch = append(g.ifMatch, aws.ToString(in.IfMatch))
	n := len(g.ifMatch)
	g.mu.Unlock()
	if g.before != nil {
		g.before(n)
	}
	out, err := g.API.GetObject(ctx, in, opts...)
	if err != nil || g.cut == nil {
		return out, err
	}
	if k := g.cut(n); k >= 0 {
		out.Body = &cutBody{ReadCloser: out.Body, left: k}
	}
	return out, nil
}

func (g *gets) matches() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.ifMatch)
}

func firstOnly(k int) func(int) int {
	return func(n int) int {
		if n == 1 {
			return k
		}
		return -1
	}
}

// TestLookupReportsWhatTheKeyHolds: an empty key is reported as such; an
// object's size and CRC64NVME come from HEAD where the server keeps the
// full-object checksum (no GET), and from a read-back where it does not, but
// only for an object of the size asked about (size < 0: never).
func TestLookupReportsWhatTheKeyHolds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	body := payload(1, 3000)
	crc := crc64nvme.Checksum(body)
	etag := e.putETag("out/look", body)

	f := s3fault.New(e.client)
	c := newClient(t, f, s3bucket.Options{})
	h, err := c.Lookup(ctx, e.bucket, "out/none", 3000)
	if err != nil || h != (s3bucket.Holding{}) {
		t.Fatalf("empty key: %+v, %v; want the zero Holding", h, err)
	}
	h, err = c.Lookup(ctx, e.bucket, "out/look", 3000)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Is(3000, crc) || h.ETag != etag {
		t.Fatalf("from HEAD: %+v, want 3000 bytes, CRC %016x, ETag %s", h, crc, etag)
	}
	if h.Is(3000, crc^1) || h.Is(2999, crc) {
		t.Fatalf("Is accepts another CRC or size: %+v", h)
	}
	if !strings.Contains(h.String(), "3000 bytes") || !strings.Contains(h.String(), fmt.Sprintf("%016x", crc)) {
		t.Fatalf("String() = %q", h.String())
	}
	if n := f.Count(s3fault.GetObject); n != 0 {
		t.Fatalf("the server gave the checksum, yet Lookup read the object back (%d GETs)", n)
	}

	// A server that keeps no full-object checksum: read back.
	f = s3fault.New(e.client)
	c = newClient(t, noHeadCRC{f}, s3bucket.Options{})
	h, err = c.Lookup(ctx, e.bucket, "out/look", 3000)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Is(3000, crc) || h.ETag != etag {
		t.Fatalf("read back: %+v, want 3000 bytes, CRC %016x, ETag %s", h, crc, etag)
	}
	if n := f.Count(s3fault.GetObject); n != 1 {
		t.Fatalf("read back with %d GETs, want 1", n)
	}
	for _, size := range []int64{2999, -1} {
		h, err = c.Lookup(ctx, e.bucket, "out/look", size)
		if err != nil {
			t.Fatal(err)
		}
		if !h.Exists || h.HaveCRC || h.Size != 3000 || h.Is(3000, crc) {
			t.Fatalf("size %d: %+v, want an object of 3000 bytes and no CRC", size, h)
		}
	}
	if n := f.Count(s3fault.GetObject); n != 1 {
		t.Fatalf("an object of another size was read back (%d GETs in all)", n)
	}

	// A key that cannot be asked about is an error naming it, not a
	// Holding.
	if h, err := c.Lookup(ctx, e.bucket, "", 3000); err == nil || h.Exists {
		t.Fatalf("empty key name: %+v, %v; want an error", h, err)
	} else {
		mustName(t, err, "s3://"+e.bucket+"/")
	}
}

// TestLookupReadBackRestartsWhenTheObjectChanges: the read-back GETs If-Match
// the ETag HEAD saw; a read that fails half-way is tried again with the same
// ETag; an object replaced meanwhile (412) sends Lookup back to HEAD, and
// the Holding then describes the new object alone: its CRC with its ETag.
func TestLookupReadBackRestartsWhenTheObjectChanges(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	old := payload(2, 3000)
	oldETag := e.putETag("out/change", old)
	newer := payload(3, 3000)
	var newETag string
	g := &gets{API: e.client, cut: firstOnly(1000), before: func(n int) {
		if n == 2 { // after the first read failed half-way
			newETag = e.putETag("out/change", newer)
		}
	}}
	c := newClient(t, noHeadCRC{g}, s3bucket.Options{})
	h, err := c.Lookup(ctx, e.bucket, "out/change", 3000)
	if err != nil {
		t.Fatal(err)
	}
	if oldETag == newETag {
		t.Fatal("the server gave both objects one ETag; the test cannot tell them apart")
	}
	if !h.Is(3000, crc64nvme.Checksum(newer)) || h.ETag != newETag {
		t.Fatalf("Lookup = %+v, want the new object (CRC %016x, ETag %s); the old one had CRC %016x, ETag %s",
			h, crc64nvme.Checksum(newer), newETag, crc64nvme.Checksum(old), oldETag)
	}
	if got, want := g.matches(), []string{oldETag, oldETag, newETag}; !slices.Equal(got, want) {
		t.Fatalf("GETs If-Match %q, want %q (the failed read again on the same ETag, then the new ETag after a HEAD)", got, want)
	}
}

// TestLookupGivesUpWhenTheObjectKeepsChanging: an object replaced before
// every read-back is an error after MaxRounds looks, naming the key and
// wrapping the server's 412; never a Holding that mixes two objects.
func TestLookupGivesUpWhenTheObjectKeepsChanging(t *testing.T) {
	e := newEnv(t)
	e.putETag("out/churn", payload(4, 3000))
	g := &gets{API: e.client, before: func(n int) { e.putETag("out/churn", payload(uint64(100+n), 3000)) }}
	c := newClient(t, noHeadCRC{g}, s3bucket.Options{MaxRounds: 3})
	h, err := c.Lookup(context.Background(), e.bucket, "out/churn", 3000)
	mustName(t, err, "s3://"+e.bucket+"/out/churn")
	if !s3call.IsPreconditionFailed(err) {
		t.Fatalf("error does not wrap the 412: %v", err)
	}
	if h != (s3bucket.Holding{}) {
		t.Fatalf("a Holding beside the error: %+v", h)
	}
	if n := len(g.matches()); n != 3 {
		t.Fatalf("%d read-backs, want MaxRounds (3)", n)
	}
}

// TestReadObject: an object is read whole; an empty key is not found and no
// error; an object of exactly max bytes is read, one byte more is an error
// naming the key and is not retried; a max of math.MaxInt64 reads the
// object (max+1 must not wrap around to a limit of nothing).
func TestReadObject(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	body := payload(5, 4000)
	e.putETag("out/small", body)
	e.putETag("out/empty", nil)
	f := s3fault.New(e.client)
	c := newClient(t, f, s3bucket.Options{})

	for _, max := range []int64{4000, 4001, 1 << 20, math.MaxInt64} {
		got, found, err := c.ReadObject(ctx, e.bucket, "out/small", max)
		if err != nil || !found || !bytes.Equal(got, body) {
			t.Fatalf("max %d: %d bytes, found=%v, %v; want the object's 4000 bytes", max, len(got), found, err)
		}
	}
	got, found, err := c.ReadObject(ctx, e.bucket, "out/empty", 0)
	if err != nil || !found || len(got) != 0 {
		t.Fatalf("zero-byte object: %q, found=%v, %v", got, found, err)
	}
	got, found, err = c.ReadObject(ctx, e.bucket, "out/none", 10)
	if err != nil || found || got != nil {
		t.Fatalf("empty key: %q, found=%v, %v; want not found and no error", got, found, err)
	}

	before := f.Count(s3fault.GetObject)
	got, found, err = c.ReadObject(ctx, e.bucket, "out/small", 3999)
	mustName(t, err, "s3://"+e.bucket+"/out/small", "larger than 3999 bytes")
	if found || got != nil {
		t.Fatalf("over max: %d bytes, found=%v beside the error", len(got), found)
	}
	if n := f.Count(s3fault.GetObject) - before; n != 1 {
		t.Fatalf("an object over max was read %d times; it is no failure to retry", n)
	}

	_, found, err = c.ReadObject(ctx, e.bucket, "", 10)
	if found {
		t.Fatal("empty key name: found")
	}
	mustName(t, err, "s3://"+e.bucket+"/")
}

// TestReadObjectRestartsWithIfMatch: a read that fails half-way starts again
// with If-Match on the first reply's ETag and returns the bytes of that one
// object; where the object was replaced or deleted in between, the restart
// is an error (412, or a 404 that is not "not found"), never the other
// object's bytes or a mix.
func TestReadObjectRestartsWithIfMatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	body := payload(6, 5000)
	for _, tc := range []struct {
		name    string
		between func(key string) // after the failed read, before the restart
		wantErr func(error) bool
	}{
		{name: "same", between: func(string) {}},
		{name: "replaced", between: func(k string) { e.putETag(k, payload(7, 5000)) }, wantErr: s3call.IsPreconditionFailed},
		{name: "deleted", between: func(k string) {
			if _, err := e.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
		}, wantErr: s3call.IsNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "out/restart-" + tc.name
			etag := e.putETag(k, body)
			g := &gets{API: e.client, cut: firstOnly(2000), before: func(n int) {
				if n == 2 {
					tc.between(k)
				}
			}}
			c := newClient(t, g, s3bucket.Options{})
			got, found, err := c.ReadObject(ctx, e.bucket, k, 1<<20)
			if want := []string{"", etag}; !slices.Equal(g.matches(), want) {
				t.Fatalf("GETs If-Match %q, want %q", g.matches(), want)
			}
			if tc.wantErr == nil {
				if err != nil || !found || !bytes.Equal(got, body) {
					t.Fatalf("%d bytes, found=%v, %v; want the object's %d bytes", len(got), found, err, len(body))
				}
				return
			}
			mustName(t, err, "s3://"+e.bucket+"/"+k)
			if !tc.wantErr(err) || found || got != nil {
				t.Fatalf("%d bytes, found=%v, %v; want only an error from the restart's condition", len(got), found, err)
			}
		})
	}
}

// putOnceFails answers every PutObject with err, writing nothing.
type putOnceFails struct {
	s3bucket.API
	err error
}

func (p putOnceFails) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return nil, p.err
}

// TestPutOnce: an empty key is written (with the content type); the same
// bytes again are not written and read back equal; other bytes leave the
// key's object as it was and return it, for the caller to refuse; an
// object over max, or a key name the server cannot take, is an error
// naming the key.
func TestPutOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := newClient(t, e.client, s3bucket.Options{})
	body := []byte(`{"marker":1}` + "\n")
	existing, written, err := c.PutOnce(ctx, e.bucket, "out/once", body, "application/x-ndjson", 1024)
	if err != nil || !written || existing != nil {
		t.Fatalf("empty key: existing %q, written=%v, %v", existing, written, err)
	}
	e.mustHold("out/once", body)
	head, err := e.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(e.bucket), Key: aws.String("out/once")})
	if err != nil {
		t.Fatal(err)
	}
	if ct := aws.ToString(head.ContentType); ct != "application/x-ndjson" {
		t.Fatalf("content type %q", ct)
	}

	existing, written, err = c.PutOnce(ctx, e.bucket, "out/once", body, "application/x-ndjson", 1024)
	if err != nil || written || !bytes.Equal(existing, body) {
		t.Fatalf("equal object: existing %q, written=%v, %v; want already there", existing, written, err)
	}
	other := []byte(`{"marker":2}` + "\n")
	existing, written, err = c.PutOnce(ctx, e.bucket, "out/once", other, "application/x-ndjson", 1024)
	if err != nil || written || !bytes.Equal(existing, body) {
		t.Fatalf("other bytes: existing %q, written=%v, %v; want the key's object, unchanged", existing, written, err)
	}
	e.mustHold("out/once", body)

	existing, written, err = c.PutOnce(ctx, e.bucket, "out/once", body, "", int64(len(body))-1)
	mustName(t, err, "s3://"+e.bucket+"/out/once", "larger than")
	if written || existing != nil {
		t.Fatalf("over max: existing %q, written=%v beside the error", existing, written)
	}
	_, written, err = c.PutOnce(ctx, e.bucket, "", body, "", 1024)
	if written {
		t.Fatal("empty key name: written")
	}
	mustName(t, err, "s3://"+e.bucket+"/")
}

// TestPutOnceRetriedWriteThatLanded: a write applied with its reply lost is
// retried, meets its own object (412) and reads it back: not written, and
// the bytes are the body, which the caller takes as its own.
func TestPutOnceRetriedWriteThatLanded(t *testing.T) {
	e := newEnv(t)
	f := s3fault.New(e.client)
	f.On(s3fault.PutObject, s3fault.Nth(1, s3fault.LostResponse))
	c := newClient(t, f, s3bucket.Options{})
	body := payload(8, 700)
	existing, written, err := c.PutOnce(context.Background(), e.bucket, "out/landed", body, "", 1024)
	if err != nil || written || !bytes.Equal(existing, body) {
		t.Fatalf("existing %d bytes, written=%v, %v; want the body read back", len(existing), written, err)
	}
	if n := f.Count(s3fault.PutObject); n != 2 {
		t.Fatalf("%d PUTs, want 2", n)
	}
	e.mustHold("out/landed", body)
}

// TestPutOnceRefusals: a 412 or 409 over a key that then reads as empty is an
// error to retry, naming the key and wrapping the refusal; a 409 over an
// object returns that object; any other refusal is an error and reads
// nothing.
func TestPutOnceRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.putETag("out/there", []byte("theirs"))
	for _, tc := range []struct {
		name, key string
		status    int
		code      string
		want      []byte // nil: an error
		is        func(error) bool
	}{
		{"412-empty", "out/none", 412, "PreconditionFailed", nil, s3call.IsPreconditionFailed},
		{"409-empty", "out/none", 409, "ConditionalRequestConflict", nil, s3call.IsConflict},
		{"409-object", "out/there", 409, "ConditionalRequestConflict", []byte("theirs"), nil},
		{"403", "out/there", 403, "AccessDenied", nil, func(err error) bool { return s3call.CodeOf(err) == s3call.AccessDenied }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gets{API: putOnceFails{API: e.client, err: s3fault.APIError(s3fault.PutObject, tc.status, tc.code, "refused")}}
			c := newClient(t, g, s3bucket.Options{})
			existing, written, err := c.PutOnce(ctx, e.bucket, tc.key, []byte("ours"), "", 1024)
			if written {
				t.Fatal("written")
			}
			if tc.want != nil {
				if err != nil || !bytes.Equal(existing, tc.want) {
					t.Fatalf("existing %q, %v; want %q", existing, err, tc.want)
				}
				return
			}
			mustName(t, err, "s3://"+e.bucket+"/"+tc.key)
			if !tc.is(err) || existing != nil {
				t.Fatalf("existing %q, %v; want an error wrapping the %d", existing, err, tc.status)
			}
			if tc.status == 403 && len(g.matches()) != 0 {
				t.Fatalf("a 403 was followed by %d reads", len(g.matches()))
			}
		})
	}
}

// maxKeys makes every ListObjectsV2 ask for pages of n keys, so that a real
// server pages a small folder.
type maxKeys struct {
	s3bucket.API
	n int32
}

func (m maxKeys) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	cp := *in
	cp.MaxKeys = aws.Int32(m.n)
	return m.API.ListObjectsV2(ctx, &cp, opts...)
}

// TestListPagesInKeyOrder: every object under the prefix, and none beside
// it, is handed over once, in key order, page by page, with its size and
// modification time; a page whose call fails once is asked for again from
// the same place; an error from fn stops the listing and is returned; a
// listing that keeps failing is an error.
func TestListPagesInKeyOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var want []s3bucket.Object
	for i := range 11 {
		k := fmt.Sprintf("list/p/%02d", 10-i) // written out of order
		e.putETag(k, make([]byte, i))
		want = append(want, s3bucket.Object{Key: k, Size: int64(i)})
	}
	slices.SortFunc(want, func(a, b s3bucket.Object) int { return strings.Compare(a.Key, b.Key) })
	e.putETag("list/pq", []byte("beside"))
	e.putETag("list/other", []byte("beside"))

	f := s3fault.New(e.client)
	f.On(s3fault.ListObjectsV2, s3fault.Nth(2, s3fault.LostResponse))
	c := newClient(t, maxKeys{API: f, n: 3}, s3bucket.Options{})
	var got []s3bucket.Object
	pages := 0
	err := c.List(ctx, e.bucket, "list/p/", func(page []s3bucket.Object) error {
		pages++
		got = append(got, page...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != 4 {
		t.Fatalf("%d pages, want 4 (11 keys, 3 a page)", pages)
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d objects, want %d: %v", len(got), len(want), got)
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Size != want[i].Size || got[i].Modified.IsZero() {
			t.Fatalf("object %d: %+v, want %s of %d bytes with a modification time", i, got[i], want[i].Key, want[i].Size)
		}
		if d := time.Since(got[i].Modified); d < -time.Hour || d > time.Hour {
			t.Fatalf("object %s modified %v", got[i].Key, got[i].Modified)
		}
	}
	if n := f.Count(s3fault.ListObjectsV2); n != 5 {
		t.Fatalf("%d listing calls, want 5 (4 pages, one of them twice)", n)
	}

	stop := errors.New("stop")
	pages = 0
	err = c.List(ctx, e.bucket, "list/p/", func([]s3bucket.Object) error { pages++; return stop })
	if !errors.Is(err, stop) || pages != 1 {
		t.Fatalf("fn's error: %v after %d pages; want it returned after the first", err, pages)
	}

	f.On(s3fault.ListObjectsV2, s3fault.Always(s3fault.BeforeSend))
	c = newClient(t, maxKeys{API: f, n: 3}, s3bucket.Options{MaxAttempts: 2})
	err = c.List(ctx, e.bucket, "list/p/", func([]s3bucket.Object) error { return nil })
	if err == nil || !s3fault.IsInjected(err) {
		t.Fatalf("a listing that keeps failing: %v", err)
	}
}
