package sink

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// conflicting answers the first n completions with a 409 of code, without
// applying them; later completions go through.
type conflicting struct {
	*s3fault.Client
	code string
	n    int64
	seen atomic.Int64
}

func (c *conflicting) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if c.seen.Add(1) <= c.n {
		return nil, s3fault.APIError(s3fault.CompleteMultipartUpload, http.StatusConflict, c.code, "A conflicting operation is in progress.")
	}
	return c.Client.CompleteMultipartUpload(ctx, in, opts...)
}

// TestCommitStageRetriesAConflict: a committer that gives up with ErrConflict
// has left the token's upload intact, so the commit stage commits the same
// token again and the file is committed, byte-exact, in the same bundle.
func TestCommitStageRetriesAConflict(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	c := testClient()
	st, err := testConfig(bucket, "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	const key = "out/global-pane-0-shard-00000-of-00001-file-00000.txt"
	data := []byte("one line\nanother line\n")
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: recoverable.MinPartSize, StagingPrefix: st.StagingPrefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(data); err != nil {
		t.Fatal(err)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := coder.EncodeCommitToken(cr)
	if err != nil {
		t.Fatal(err)
	}
	// One round per committer call, and a 409 for each of the first two
	// calls: the committer gives up twice, the third call commits.
	api := &conflicting{Client: s3fault.New(c), code: "OperationAborted", n: 2}
	cm, err := committer.New(api, committer.Options{StagingPrefix: st.StagingPrefix, MaxAttempts: 1, MaxRounds: 1, SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	fn := &commitFn{S: st.folder, committer: cm, bucket: s3bucket.New(api, s3bucket.Options{MaxAttempts: 1, MaxRounds: 1})}
	if err := fn.init(api); err != nil {
		t.Fatal(err)
	}
	fn.pause = 0
	var emitted []FileResult
	err = fn.ProcessElement(ctx, pendingFile{Commit: b, Result: FileResult{Bucket: bucket, Key: key}}, func(r FileResult) { emitted = append(emitted, r) })
	if err != nil {
		t.Fatalf("commit stage: %v", err)
	}
	if len(emitted) != 1 || api.seen.Load() != 3 {
		t.Fatalf("%d results, %d completions; want 1 result after 3 completions", len(emitted), api.seen.Load())
	}
	if got := s3test.Object(t, c, bucket, key); string(got) != string(data) {
		t.Fatalf("%s holds %q, want %q", key, got, data)
	}
}

// TestCommitAgain: what makes the commit stage call the committer again.
func TestCommitAgain(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&recoverable.Error{Op: "commit", Err: committer.ErrConflict}, true},
		{s3fault.FaultError(s3fault.CompleteMultipartUpload, s3fault.SlowDown), true},
		{&recoverable.Error{Op: "commit", Err: committer.ErrRewriteRequired}, false},
		{&recoverable.Error{Op: "commit", Err: committer.ErrKeyTaken}, false},
		{&recoverable.Error{Op: "commit", Err: committer.ErrDataLost}, false},
		{context.Canceled, false},
	} {
		if got := commitAgain(tc.err); got != tc.want {
			t.Errorf("commitAgain(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if errors.Is(committer.ErrRewriteRequired, committer.ErrDataLost) {
		t.Fatal("ErrRewriteRequired must not read as ErrDataLost")
	}
}
