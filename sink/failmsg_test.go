package sink

import (
	"errors"
	"strings"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

// A writer's failure names its file once: an error from the recoverable
// package already carries the bucket and key, and the sink adds only its
// prefix; other errors get the file named by the sink.
func TestWriterFailNamesTheKeyOnce(t *testing.T) {
	fn := &writeFilesFn{S: writerSettings{folder: folder{Bucket: "bucket", Prefix: "out"}}, ext: ".txt"}
	w := &fileWriter{fn: fn, b: &batch{Window: "global", Shard: 0, Shards: 1}}
	key := w.key()
	inner := &recoverable.Error{Op: "open", Bucket: "bucket", Key: key, Err: errors.New("create multipart upload: refused")}
	for _, err := range []error{
		w.fail("open", inner),
		w.fail("write", errors.New("disk full")),
	} {
		if n := strings.Count(err.Error(), key); n != 1 {
			t.Errorf("%q names the key %d times, want once", err, n)
		}
		if !strings.HasPrefix(err.Error(), "s3once sink: ") {
			t.Errorf("%q lacks the sink's prefix", err)
		}
	}
	if !errors.Is(w.fail("open", inner), inner) {
		t.Error("the recoverable error is not wrapped")
	}
}
