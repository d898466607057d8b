package recoverable_test

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// TestWriterReusesPartBuffers: the streams of one Writer share its part
// buffers. A second file allocates far less than one part buffer, and both
// files hold exactly their own bytes.
func TestWriterReusesPartBuffers(t *testing.T) {
	c := server.Client(s3test.ClientOptions{})
	bucket := server.Bucket(t)
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: streamtest.PartSize, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"first":  streamtest.Data(80, 3*streamtest.PartSize+4321),
		"second": streamtest.Data(81, 3*streamtest.PartSize+1234),
	}
	var allocated [2]uint64
	for i, key := range []string{"first", "second"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data := files[key]
		for p := data; len(p) > 0; {
			n := min(len(p), 256<<10)
			if _, err := s.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		cr, err := s.CloseForCommit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated[i] = after.TotalAlloc - before.TotalAlloc
		if err := streamtest.Complete(ctx, c, cr); err != nil {
			t.Fatal(err)
		}
		_ = s.Dispose(ctx)
	}
	// The first file allocates its buffers as it needs them: one at least,
	// and never more than Concurrency + 1 (three), however fast its parts
	// upload (a part acknowledged before the next one fills gives its
	// buffer back to the pool, so two may do); the requests add less than
	// a buffer. The second takes them from the pool and allocates only the
	// requests.
	if allocated[0] < streamtest.PartSize || allocated[0] >= 4*streamtest.PartSize {
		t.Fatalf("first file allocated %d bytes; want between one part buffer and its 3 buffers plus the requests (%d to %d)",
			allocated[0], streamtest.PartSize, 4*streamtest.PartSize)
	}
	if allocated[1] >= streamtest.PartSize {
		t.Fatalf("second file allocated %d bytes, at least one part buffer: buffers not reused", allocated[1])
	}
	for key, want := range files {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes read back differ from the %d written", key, len(got), len(want))
		}
	}
}
