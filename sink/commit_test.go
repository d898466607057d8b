package sink

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestCommitStageRefusesForeignTokens: a commit token that names another
// bucket, a key outside the sink's prefix, or a key under it that is not an
// s3once file name, is refused by the commit stage before any S3 call: the
// uploads it names stay open and the objects at its keys stay as they were.
func TestCommitStageRefusesForeignTokens(t *testing.T) {
	ctx := context.Background()
	own, other := srv.Bucket(t), srv.Bucket(t)
	c := testClient()
	st, err := testConfig(own, "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	const victim = "warehouse/orders.parquet"
	fileName := "out/global-pane-0-shard-00000-of-00001-file-00000.txt"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(own), Key: aws.String(victim), Body: bytes.NewReader([]byte("table"))}); err != nil {
		t.Fatal(err)
	}
	// Genuine uploads with genuine tokens, at keys the sink does not own.
	open := func(bucket, key string) recoverable.CommitToken {
		w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: recoverable.MinPartSize})
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("bytes of another application\n"))
		cr, err := s.CloseForCommit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cr
	}
	tokens := map[string]recoverable.CommitToken{
		"another bucket":          open(other, fileName),
		"a key outside Prefix":    open(own, victim),
		"not a file name":         open(own, "out/notes.txt"),
		"a sibling of the prefix": open(own, "out-v2/global-pane-0-shard-00000-of-00001-file-00000.txt"),
	}
	before := map[string][]string{own: s3test.Uploads(t, c, own), other: s3test.Uploads(t, c, other)}
	for name, cr := range tokens {
		t.Run(name, func(t *testing.T) {
			b, err := coder.EncodeCommitToken(cr)
			if err != nil {
				t.Fatal(err)
			}
			log := s3fault.New(c)
			fn := &commitFn{S: st.folder}
			if err := fn.init(log); err != nil {
				t.Fatal(err)
			}
			var emitted []FileResult
			err = fn.ProcessElement(ctx, pendingFile{Commit: b, Result: FileResult{Bucket: own, Key: fileName}}, func(r FileResult) { emitted = append(emitted, r) })
			var re *recoverable.Error
			if !errors.Is(err, recoverable.ErrInvalidToken) || !errors.As(err, &re) || re.Hint == "" {
				t.Fatalf("commit stage: %v, want a typed ErrInvalidToken with a hint", err)
			}
			if n := len(log.Calls()); n != 0 || len(emitted) != 0 {
				t.Fatalf("%d S3 calls made, %d results emitted; want none", n, len(emitted))
			}
		})
	}
	for _, b := range []string{own, other} {
		if got := s3test.Uploads(t, c, b); !slices.Equal(got, before[b]) {
			t.Fatalf("uploads of %s: %v, want %v", b, got, before[b])
		}
	}
	if got := s3test.Object(t, c, own, victim); string(got) != "table" {
		t.Fatalf("%s holds %q", victim, got)
	}
	if keys := s3test.Keys(t, c, other, ""); len(keys) != 0 {
		t.Fatalf("the other bucket holds %v", keys)
	}
}
