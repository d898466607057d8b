package committer_test

// Discard (discard.go), on the real server: a refused run's uploads and
// their side objects removed, under one clean-up bound.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
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
