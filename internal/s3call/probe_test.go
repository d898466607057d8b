package s3call_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/s3call"

	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// probeEnv is a bucket on a server of the test's own, and a client of it
// without SDK retries, so that an injected fault reaches the probe.
type probeEnv struct {
	client *s3.Client
	bucket string
}

func newProbeEnv(t *testing.T) probeEnv {
	srv := s3test.Start(t, s3test.Options{})
	return probeEnv{client: srv.Client(s3test.ClientOptions{}), bucket: srv.Bucket(t)}
}

// TestProbes runs every probe against the server: a multipart upload made,
// listed, completed once with If-None-Match and refused the second time,
// an object put, read and deleted, a batch deleted, and the bucket's
// settings read.
func TestProbes(t *testing.T) {
	e := newProbeEnv(t)
	ctx := context.Background()
	p := s3call.NewProbes(e.client, e.bucket, 0)
	body := bytes.Repeat([]byte("probe "), 10)

	if err := p.List(ctx, "probes/"); err != nil {
		t.Fatalf("List: %v", err)
	}
	completion := func(key, id, etag string, b []byte) s3call.Completion {
		return s3call.Completion{Key: key, UploadID: id, Parts: []s3call.CompletedPart{{Number: 1, ETag: etag}}, Size: int64(len(b)), IfNoneMatch: true}
	}
	upload := func(key string, b []byte) (id, etag string) {
		t.Helper()
		id, err := p.CreateUpload(ctx, key, false)
		if err != nil || id == "" {
			t.Fatalf("CreateUpload = %q, %v", id, err)
		}
		etag, err = p.UploadPart(ctx, key, id, 1, b, false)
		if err != nil || etag == "" {
			t.Fatalf("UploadPart = %q, %v", etag, err)
		}
		return id, etag
	}
	const key = "probes/done"
	id, etag := upload(key, body)
	if etags, err := p.ListParts(ctx, key, id); err != nil || len(etags) != 1 || etags[0] != etag {
		t.Fatalf("ListParts = %v, %v; want [%s]", etags, err, etag)
	}
	if err := p.Complete(ctx, completion(key, id, etag, body)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n, err := p.Head(ctx, key); err != nil || n != int64(len(body)) {
		t.Fatalf("Head = %d, %v; want %d", n, err, len(body))
	}
	if got, err := p.Read(ctx, key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Read = %q, %v; want %q", got, err, body)
	}
	other := append([]byte("other "), body...)
	id2, etag2 := upload(key, other)
	if err := p.Complete(ctx, completion(key, id2, etag2, other)); !s3call.IsPreconditionFailed(err) && !s3call.IsConflict(err) {
		t.Fatalf("a second conditional Complete = %v; want 412 or 409", err)
	}
	if err := p.Abort(ctx, key, id2); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if got, err := p.Read(ctx, key); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after the refused Complete, Read = %q, %v; want the first bytes", got, err)
	}

	if err := p.Put(ctx, "probes/side", body, true, ""); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got, err := p.Read(ctx, "probes/side"); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Read of the put object = %q, %v", got, err)
	}
	if err := p.Delete(ctx, "probes/side"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := p.Read(ctx, "probes/side"); !s3call.IsNotFound(err) {
		t.Fatalf("Read of a deleted object = %v; want not found", err)
	}
	if _, err := p.Head(ctx, "probes/side"); !s3call.IsNotFound(err) {
		t.Fatalf("Head of a deleted object = %v; want not found", err)
	}

	big := bytes.Repeat([]byte{'x'}, 1<<20+1)
	if err := p.Put(ctx, "probes/big", big, false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(ctx, "probes/big"); err == nil {
		t.Error("Read of an object over 1 MiB succeeded")
	}
	if err := p.DeleteBatch(ctx, []string{key, "probes/big", "probes/never-there"}); err != nil {
		t.Fatalf("DeleteBatch: %v", err)
	}
	for _, k := range []string{key, "probes/big"} {
		if _, err := p.Head(ctx, k); !s3call.IsNotFound(err) {
			t.Errorf("Head of %s after DeleteBatch = %v; want not found", k, err)
		}
	}

	if !p.ReadsBucketSettings() {
		t.Fatal("probes over an SDK client cannot read bucket settings")
	}
	if status, err := p.Versioning(ctx); err != nil || status != "" {
		t.Errorf("Versioning of a new bucket = %q, %v; want never enabled", status, err)
	}
	if r, _ := p.DefaultRetention(ctx); r != "" {
		t.Errorf("DefaultRetention of a bucket without Object Lock = %q", r)
	}
	if err := p.ListVersions(ctx, "probes/"); err != nil {
		t.Errorf("ListVersions: %v", err)
	}
}

// TestProbesTryOnce: a probe is one attempt, whatever the failure, where
// the committer's own calls retry it; a client without the bucket-settings
// calls says so rather than failing a probe.
func TestProbesTryOnce(t *testing.T) {
	e := newProbeEnv(t)
	ctx := context.Background()
	for _, k := range []s3fault.Kind{s3fault.BeforeSend, s3fault.LostResponse} {
		f := s3fault.New(e.client)
		f.On(s3fault.PutObject, s3fault.Nth(1, k))
		p := s3call.NewProbes(f, e.bucket, 0)
		err := p.Put(ctx, "probes/once-"+k.String(), []byte("x"), false, "")
		puts := 0
		for _, c := range f.Calls() {
			if c.Op == s3fault.PutObject {
				puts++
			}
		}
		if err == nil || puts != 1 {
			t.Errorf("%v on the first PutObject: the probe returned %v after %d PutObject calls; want its failure after one", k, err, puts)
		}
	}

	f := s3fault.New(e.client)
	p := s3call.NewProbes(f, e.bucket, 0)
	if p.ReadsBucketSettings() {
		t.Fatal("probes over a client without GetBucketVersioning claim to read bucket settings")
	}
	if _, err := p.Versioning(ctx); !errors.Is(err, s3call.ErrNoBucketSettings) {
		t.Errorf("Versioning over such a client = %v; want ErrNoBucketSettings", err)
	}
}
