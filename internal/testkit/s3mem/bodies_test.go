package s3mem_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestStoredAndRelease: Stored gives an object's bytes as the server holds
// them (a multipart object in its parts); after Release, the next Fake
// reuses the buffers, and what it stores and serves is its own bytes, not
// the released ones.
func TestStoredAndRelease(t *testing.T) {
	first := func(seed byte) (*s3mem.Fake, string, []byte) {
		f := s3mem.New(s3mem.Options{})
		bucket := f.Bucket()
		c := f.NewClient(s3mem.ClientOptions{})
		m := newMPU(t, c, bucket, "k")
		m.part(1, data(seed, 5*mib))
		m.part(2, data(seed+1, 5*mib))
		m.part(3, data(seed+2, 100))
		if err := m.complete(nil); err != nil {
			t.Fatal(err)
		}
		put(t, c, bucket, "tail", data(seed+3, 3*mib))
		return f, bucket, m.bytes
	}
	f, bucket, want := first(1)
	chunks, ok := f.Stored(bucket, "k")
	if !ok || len(chunks) != 3 || !bytes.Equal(bytes.Join(chunks, nil), want) {
		t.Fatalf("Stored: %d pieces (%v), want the object's 3 parts", len(chunks), ok)
	}
	if _, ok := f.Stored(bucket, "none"); ok {
		t.Fatal("Stored finds an object that was never written")
	}
	if _, ok := f.Stored("no-bucket", "k"); ok {
		t.Fatal("Stored finds an object in a bucket that does not exist")
	}
	f.Release()
	if _, ok := f.Stored(bucket, "k"); ok {
		t.Fatal("the Fake still holds the object after Release")
	}

	g, bucket, want := first(50)
	got, err := get(t, g.NewClient(s3mem.ClientOptions{}), &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k")})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the next Fake serves %d bytes (%v), not its own %d", len(got), err, len(want))
	}
	out, err := g.NewClient(s3mem.ClientOptions{}).GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("tail")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(out.Body); err != nil || !bytes.Equal(buf.Bytes(), data(53, 3*mib)) {
		t.Fatalf("the next Fake's single object: %d bytes, %v", buf.Len(), err)
	}
}

// TestETagsOfRepeatedBodies: every ETag is the MD5 of the bytes received,
// in a Fake whose body buffers come from a released one too: the same bytes
// again, other bytes of the same length, the same bytes with one changed.
func TestETagsOfRepeatedBodies(t *testing.T) {
	base := data(9, 5*mib)
	changed := append([]byte(nil), base...)
	changed[len(changed)/2] ^= 1
	for round := range 2 {
		f := s3mem.New(s3mem.Options{})
		bucket := f.Bucket()
		c := f.NewClient(s3mem.ClientOptions{})
		for i, body := range [][]byte{base, data(10, 5*mib), changed, base} {
			out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(fmt.Sprintf("k%d", i)), Body: bytes.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"%x"`, md5.Sum(body)); aws.ToString(out.ETag) != want {
				t.Fatalf("round %d, body %d: ETag %s, want %s", round, i, aws.ToString(out.ETag), want)
			}
		}
		f.Release()
	}
}
