package committer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/crc64nvme"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// env is one test's server, bucket and clients.
type env struct {
	t      *testing.T
	srv    *s3test.Server
	client *s3.Client // SDK retries off
	bucket string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if e := onFake(t); e != nil {
		return e // the test runs under TestOnFake (mem_test.go)
	}
	if e := onMinIO(t); e != nil {
		return e // the test runs under TestOnMinIO (minio_test.go)
	}
	srv := s3test.Start(t, s3test.Options{})
	return &env{t: t, srv: srv, client: srv.Client(s3test.ClientOptions{MaxAttempts: 1}), bucket: srv.Bucket(t)}
}

// fast are committer options for tests: short backoffs.
func fast(o committer.Options) committer.Options {
	if o.BaseBackoff == 0 {
		o.BaseBackoff = 2 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 20 * time.Millisecond
	}
	return o
}

func newCommitter(t *testing.T, client committer.S3, o committer.Options) *committer.Committer {
	t.Helper()
	c, err := committer.New(client, fast(o))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// payload returns n pseudo-random bytes determined by seed.
func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// write writes data as one file at key and closes it for commit. With
// persists > 0 it persists that many times along the way (with tails in side
// objects), so the upload has side objects for the commit to delete.
func (e *env) write(key string, data []byte, persists int) recoverable.CommitToken {
	e.t.Helper()
	return writeWith(e.t, e.client, e.bucket, key, data, persists, recoverable.Options{})
}

func writeWith(t *testing.T, client recoverable.S3, bucket, key string, data []byte, persists int, o recoverable.Options) recoverable.CommitToken {
	t.Helper()
	ctx := context.Background()
	if o.PartSize == 0 {
		o.PartSize = recoverable.MinPartSize
	}
	if o.InlineTailMax == 0 {
		o.InlineTailMax = -1 // tails go to side objects
	}
	w, err := recoverable.NewWriter(client, o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Dispose(ctx)
	step := len(data)/(persists+1) + 1
	rest := data
	for i := 0; i < persists && len(rest) > 0; i++ {
		n := min(step, len(rest))
		if _, err := s.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
		if _, err := s.Persist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Write(rest); err != nil {
		t.Fatal(err)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Size() != int64(len(data)) || cr.CRC() != crc64nvme.Checksum(data) {
		t.Fatalf("token describes %d bytes %016x, wrote %d bytes %016x", cr.Size(), cr.CRC(), len(data), crc64nvme.Checksum(data))
	}
	return cr
}

// get returns the object at key, or nil when there is none.
func (e *env) get(key string) []byte {
	e.t.Helper()
	out, err := e.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	if err != nil {
		if s3call.IsNotFound(err) {
			return nil
		}
		e.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		e.t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// mustHold fails unless key holds exactly want.
func (e *env) mustHold(key string, want []byte) {
	e.t.Helper()
	got := e.get(key)
	if got == nil {
		e.t.Fatalf("no object at %s", key)
	}
	if !bytes.Equal(got, want) {
		e.t.Fatalf("%s holds %d bytes (CRC %016x), want %d bytes (CRC %016x)", key, len(got), crc64nvme.Checksum(got), len(want), crc64nvme.Checksum(want))
	}
}

// uploadExists tells whether the upload is still open.
func (e *env) uploadExists(cr recoverable.CommitToken) bool {
	e.t.Helper()
	_, err := e.client.ListParts(context.Background(), &s3.ListPartsInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID)})
	if err == nil {
		return true
	}
	if s3call.IsNoSuchUpload(err) {
		return false
	}
	e.t.Fatalf("list parts: %v", err)
	return false
}

// keys lists the keys under prefix.
func (e *env) keys(prefix string) []string {
	e.t.Helper()
	out, err := e.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// mustBeTyped fails unless err names the token's bucket, key and upload.
func mustBeTyped(t *testing.T, err error, cr recoverable.CommitToken) *recoverable.Error {
	t.Helper()
	var re *recoverable.Error
	if !errors.As(err, &re) {
		t.Fatalf("error is not a *recoverable.Error: %v", err)
	}
	if re.Bucket != cr.Bucket || re.Key != cr.Key || re.UploadID != cr.UploadID {
		t.Fatalf("error names s3://%s/%s (upload %s), want s3://%s/%s (upload %s)", re.Bucket, re.Key, re.UploadID, cr.Bucket, cr.Key, cr.UploadID)
	}
	return re
}

func checkResult(t *testing.T, res committer.Result, cr recoverable.CommitToken) {
	t.Helper()
	if res.Created == res.AlreadyCommitted {
		t.Fatalf("Created=%v AlreadyCommitted=%v: exactly one must hold", res.Created, res.AlreadyCommitted)
	}
	if res.Size != cr.Size() || res.CRC != cr.CRC() || res.Key != cr.Key || res.UploadID != cr.UploadID {
		t.Fatalf("result %+v does not describe the token", res)
	}
}

func key(name string, i int) string { return fmt.Sprintf("out/%s-%03d", name, i) }

func (e *env) clientOpts() s3test.ClientOptions { return s3test.ClientOptions{MaxAttempts: 1} }
