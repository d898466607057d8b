package committer_test

// The output folder's operations (folder.go): Lookup, ReadObject, PutOnce,
// List and Discard, on the real server, with the edge cases the sink's
// barrier, markers and manifests and s3once verify meet.

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
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/recoverable"
)

// putETag writes body at key, unconditionally, and returns its ETag.
func (e *env) putETag(key string, body []byte) string {
	e.t.Helper()
	out, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(e.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
	return aws.ToString(out.ETag)
}

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
	committer.S3
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
	out, err := g.S3.GetObject(ctx, in, opts...)
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
	c := newCommitter(t, f, committer.Options{})
	h, err := c.Lookup(ctx, e.bucket, "out/none", 3000)
	if err != nil || h != (committer.Holding{}) {
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
	c = newCommitter(t, noHeadCRC{f}, committer.Options{})
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
	g := &gets{S3: e.client, cut: firstOnly(1000), before: func(n int) {
		if n == 2 { // after the first read failed half-way
			newETag = e.putETag("out/change", newer)
		}
	}}
	c := newCommitter(t, noHeadCRC{g}, committer.Options{})
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
	g := &gets{S3: e.client, before: func(n int) { e.putETag("out/churn", payload(uint64(100+n), 3000)) }}
	c := newCommitter(t, noHeadCRC{g}, committer.Options{MaxRounds: 3})
	h, err := c.Lookup(context.Background(), e.bucket, "out/churn", 3000)
	mustName(t, err, "s3://"+e.bucket+"/out/churn")
	if !s3call.IsPreconditionFailed(err) {
		t.Fatalf("error does not wrap the 412: %v", err)
	}
	if h != (committer.Holding{}) {
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
	c := newCommitter(t, f, committer.Options{})

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
			g := &gets{S3: e.client, cut: firstOnly(2000), before: func(n int) {
				if n == 2 {
					tc.between(k)
				}
			}}
			c := newCommitter(t, g, committer.Options{})
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
	committer.S3
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
	c := newCommitter(t, e.client, committer.Options{})
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
	c := newCommitter(t, f, committer.Options{})
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
			g := &gets{S3: putOnceFails{S3: e.client, err: s3fault.APIError(s3fault.PutObject, tc.status, tc.code, "refused")}}
			c := newCommitter(t, g, committer.Options{})
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
	committer.S3
	n int32
}

func (m maxKeys) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	cp := *in
	cp.MaxKeys = aws.Int32(m.n)
	return m.S3.ListObjectsV2(ctx, &cp, opts...)
}

// TestListPagesInKeyOrder: every object under the prefix, and none beside
// it, is handed over once, in key order, page by page, with its size and
// modification time; a page whose call fails once is asked for again from
// the same place; an error from fn stops the listing and is returned; a
// listing that keeps failing is an error.
func TestListPagesInKeyOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var want []committer.Object
	for i := range 11 {
		k := fmt.Sprintf("list/p/%02d", 10-i) // written out of order
		e.putETag(k, make([]byte, i))
		want = append(want, committer.Object{Key: k, Size: int64(i)})
	}
	slices.SortFunc(want, func(a, b committer.Object) int { return strings.Compare(a.Key, b.Key) })
	e.putETag("list/pq", []byte("beside"))
	e.putETag("list/other", []byte("beside"))

	f := s3fault.New(e.client)
	f.On(s3fault.ListObjectsV2, s3fault.Nth(2, s3fault.LostResponse))
	c := newCommitter(t, maxKeys{S3: f, n: 3}, committer.Options{})
	var got []committer.Object
	pages := 0
	err := c.List(ctx, e.bucket, "list/p/", func(page []committer.Object) error {
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
	err = c.List(ctx, e.bucket, "list/p/", func([]committer.Object) error { pages++; return stop })
	if !errors.Is(err, stop) || pages != 1 {
		t.Fatalf("fn's error: %v after %d pages; want it returned after the first", err, pages)
	}

	f.On(s3fault.ListObjectsV2, s3fault.Always(s3fault.BeforeSend))
	c = newCommitter(t, maxKeys{S3: f, n: 3}, committer.Options{MaxAttempts: 2})
	err = c.List(ctx, e.bucket, "list/p/", func([]committer.Object) error { return nil })
	if err == nil || !s3fault.IsInjected(err) {
		t.Fatalf("a listing that keeps failing: %v", err)
	}
}

// sideObjects lists the keys under the token's side-object folder.
func (e *env) sideObjects(cr recoverable.CommitToken) []string {
	e.t.Helper()
	return e.keys(recoverable.SideObjectPrefix(cr.StagingPrefix, cr.UploadID))
}

// TestDiscardRemovesUploadsAndSideObjects: every token's upload is aborted
// and its side objects deleted, leaving the key empty and another upload's
// side objects and another tool's key under the staging prefix alone; an
// upload already gone is no error; a token under another staging prefix
// has its upload aborted and its side objects kept, with an error naming
// it; an invalid token is an error and nothing is asked of the server for
// it.
func TestDiscardRemovesUploadsAndSideObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.write("out/discard-a", payload(9, 3000), 2)
	b := e.write("out/discard-b", payload(10, 3000), 2)
	gone := e.write("out/discard-gone", payload(11, 3000), 1)
	keep := e.write("out/discard-keep", payload(12, 3000), 2)
	foreignKey := recoverable.DefaultStagingPrefix + "other-tool/notes.txt"
	e.putETag(foreignKey, []byte("not s3once's"))
	if _, err := e.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(gone.Bucket), Key: aws.String(gone.Key), UploadId: aws.String(gone.UploadID),
	}); err != nil {
		t.Fatal(err)
	}
	for _, cr := range []recoverable.CommitToken{a, b, gone, keep} {
		if len(e.sideObjects(cr)) == 0 {
			t.Fatalf("%s has no side objects: the test cannot see them deleted", cr.Key)
		}
	}

	c := newCommitter(t, e.client, committer.Options{})
	if err := c.Discard(ctx, nil); err != nil {
		t.Fatalf("no tokens: %v", err)
	}
	if err := c.Discard(ctx, []recoverable.CommitToken{a, b, gone}); err != nil {
		t.Fatal(err)
	}
	for _, cr := range []recoverable.CommitToken{a, b, gone} {
		if e.uploadExists(cr) {
			t.Errorf("%s: upload still open", cr.Key)
		}
		if left := e.sideObjects(cr); len(left) != 0 {
			t.Errorf("%s: side objects left: %v", cr.Key, left)
		}
		if e.get(cr.Key) != nil {
			t.Errorf("%s: an object at the key", cr.Key)
		}
	}
	if !e.uploadExists(keep) || len(e.sideObjects(keep)) == 0 {
		t.Fatal("another upload, not discarded, lost its upload or side objects")
	}
	e.mustHold(foreignKey, []byte("not s3once's"))

	// A token under another staging prefix: aborted, side objects kept.
	foreign := e.write("out/discard-foreign", payload(13, 3000), 1)
	foreign.StagingPrefix = "elsewhere"
	err := c.Discard(ctx, []recoverable.CommitToken{foreign})
	if !errors.Is(err, recoverable.ErrForeignStaging) {
		t.Fatalf("foreign staging prefix: %v", err)
	}
	mustName(t, err, foreign.UploadID, "s3://"+foreign.Bucket+"/"+foreign.Key)
	if e.uploadExists(foreign) {
		t.Fatal("foreign staging prefix: upload still open")
	}

	// Invalid tokens: refused before any call.
	f := s3fault.New(e.client)
	c = newCommitter(t, f, committer.Options{})
	bad := keep
	bad.UploadID = ""
	err = c.Discard(ctx, []recoverable.CommitToken{bad})
	if !errors.Is(err, recoverable.ErrInvalidToken) {
		t.Fatalf("a token without an upload ID: %v; want ErrInvalidToken", err)
	}
	mustName(t, err, "s3://"+bad.Bucket+"/"+bad.Key)
	if calls := f.Calls(); len(calls) != 0 {
		t.Fatalf("an invalid token made %d calls, the first %s", len(calls), calls[0].Op)
	}
	if !e.uploadExists(keep) || len(e.sideObjects(keep)) == 0 {
		t.Fatal("an invalid token's discard touched the upload it names")
	}
}

// TestDiscardDeletesInBatches: a token with more side objects than one
// DeleteObjects takes (1000) has them all deleted, in batches of at most
// 1000 keys.
func TestDiscardDeletesInBatches(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cr := e.write("out/many", payload(14, 3000), 1)
	const extra = 1004
	var g errgroup.Group
	g.SetLimit(8)
	for i := range extra {
		g.Go(func() error {
			k := ownkeys.SideObjectKey(cr.StagingPrefix, cr.UploadID, uint64(100+i), "bulk")
			_, err := e.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(k), Body: strings.NewReader("x")})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f := s3fault.New(e.client)
	if err := newCommitter(t, f, committer.Options{}).Discard(ctx, []recoverable.CommitToken{cr}); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, call := range f.Calls() {
		if call.Op == s3fault.DeleteObjects {
			sizes = append(sizes, len(call.Input.(*s3.DeleteObjectsInput).Delete.Objects))
		}
	}
	if want := []int{1000, extra + 1 - 1000}; !slices.Equal(sizes, want) {
		t.Fatalf("DeleteObjects batches of %v keys, want %v", sizes, want)
	}
	if left := e.sideObjects(cr); len(left) != 0 {
		t.Fatalf("%d side objects left, the first %s", len(left), left[0])
	}
}

// TestDiscardRemovesOldVersions: on a versioned bucket (MinIO) with
// Options.Versioned, a discarded upload's side objects leave no version and
// no delete marker; another tool's versions under the staging prefix stay.
func TestDiscardRemovesOldVersions(t *testing.T) {
	_, c, bucket := versionedBucket(t)
	ctx := context.Background()
	staging := recoverable.DefaultStagingPrefix
	foreign := staging + "other-tool/notes.txt"
	for _, body := range []string{"one", "two"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(foreign), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	foreignVersions := versions(t, c, bucket, staging+"other-tool/")
	cr := persistTwice(t, c, bucket, "out/versioned")
	// One side object overwritten: it has an old version too.
	folder := ownkeys.SideObjectPrefix(staging, cr.UploadID)
	before := versions(t, c, bucket, folder)
	if len(before) != 2 {
		t.Fatalf("before: %v, want two side objects", before)
	}
	k := strings.TrimSuffix(before[0], "#v")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("again")}); err != nil {
		t.Fatal(err)
	}
	cm := newCommitter(t, c, committer.Options{StagingPrefix: staging, Versioned: true})
	if err := cm.Discard(ctx, []recoverable.CommitToken{cr}); err != nil {
		t.Fatal(err)
	}
	if left := versions(t, c, bucket, folder); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	if got := versions(t, c, bucket, staging+"other-tool/"); !slices.Equal(got, foreignVersions) {
		t.Fatalf("another tool's versions changed: %v, were %v", got, foreignVersions)
	}
	if got := versions(t, c, bucket, "out/"); len(got) != 0 {
		t.Fatalf("versions at the output: %v", got)
	}
}

// hangAborts makes every AbortMultipartUpload wait for its context to end,
// recording each call's deadline. A call whose deadline is a minute away or
// more (no clean-up bound: only the 10-minute CallTimeout) fails at once
// rather than hang the test.
type hangAborts struct {
	committer.S3
	mu        sync.Mutex
	deadlines []time.Time
}

func (h *hangAborts) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("hangAborts: a call without a deadline")
	}
	h.mu.Lock()
	h.deadlines = append(h.deadlines, dl)
	h.mu.Unlock()
	if time.Until(dl) >= time.Minute {
		return nil, errors.New("hangAborts: a call without the clean-up bound")
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestDiscardUnderOneCleanupBound: with a server that never answers an
// abort, Discard ends at CleanupTimeout for all its tokens together (more
// than it works on at once), not once per token or per batch of tokens:
// every call runs under the one deadline. The error names the tokens'
// uploads and keys and says how many more failed.
func TestDiscardUnderOneCleanupBound(t *testing.T) {
	e := newEnv(t)
	const tokens = 48 // three times the uploads Discard works on at once
	var crs []recoverable.CommitToken
	for i := range tokens {
		crs = append(crs, recoverable.CommitToken{
			Bucket: e.bucket, Key: fmt.Sprintf("out/hang-%02d", i), UploadID: fmt.Sprintf("upload-%02d", i),
			StagingPrefix: recoverable.DefaultStagingPrefix, Parts: recoverable.PartList{Count: 1, Bytes: 1},
		})
	}
	h := &hangAborts{S3: e.client}
	c := newCommitter(t, h, committer.Options{CleanupTimeout: time.Second, CallTimeout: 10 * time.Minute})
	start := time.Now()
	err := c.Discard(context.Background(), crs)
	t.Logf("Discard returned after %v: %v", time.Since(start), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v; want the clean-up bound's", err)
	}
	mustName(t, err, "abort upload upload-", "of s3://"+e.bucket+"/out/hang-", fmt.Sprintf("and %d more", tokens-3))
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deadlines) != tokens {
		t.Fatalf("%d aborts, want %d", len(h.deadlines), tokens)
	}
	for _, d := range h.deadlines {
		if !d.Equal(h.deadlines[0]) {
			t.Fatalf("aborts ran under deadlines %v and %v: each got a clean-up bound of its own, not Discard's one", h.deadlines[0], d)
		}
	}
}

// TestDiscardGivesUpAtTheCleanupBound: where the server keeps failing the
// deletes, Discard stops at CleanupTimeout, well before the attempts run
// out, and reports the token's upload, key and side-object folder, which the
// sweep then cleans.
func TestDiscardGivesUpAtTheCleanupBound(t *testing.T) {
	e := newEnv(t)
	cr := e.write("out/stuck", payload(15, 3000), 2)
	f := s3fault.New(e.client)
	f.On(s3fault.DeleteObjects, s3fault.Always(s3fault.BeforeSend))
	const attempts = 100
	c := newCommitter(t, f, committer.Options{
		CleanupTimeout: time.Second, MaxAttempts: attempts, BaseBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	err := c.Discard(context.Background(), []recoverable.CommitToken{cr})
	mustName(t, err, cr.UploadID, "s3://"+cr.Bucket+"/"+cr.Key, recoverable.SideObjectPrefix(cr.StagingPrefix, cr.UploadID))
	if n := f.Count(s3fault.DeleteObjects); n == 0 || n >= attempts {
		t.Fatalf("%d DeleteObjects; want the bound (1s, backoffs of 10ms and more) to stop them short of %d", n, attempts)
	}
	if e.uploadExists(cr) {
		t.Fatal("upload still open")
	}
	if len(e.sideObjects(cr)) == 0 {
		t.Fatal("side objects gone though every delete failed")
	}
}
