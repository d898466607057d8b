package committer_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// abortAlwaysOK answers every AbortMultipartUpload with success, as MinIO
// does for an upload that was completed (S3 and versitygw answer 404
// NoSuchUpload). It counts the aborts that reached the server.
type abortAlwaysOK struct {
	committer.S3
	aborts atomic.Int32
}

func (a *abortAlwaysOK) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	a.aborts.Add(1)
	out, err := a.S3.AbortMultipartUpload(ctx, in, opts...)
	if s3call.IsNoSuchUpload(err) {
		return &s3.AbortMultipartUploadOutput{}, nil
	}
	return out, err
}

// TestUploadAbortedOnlyWhenOpen: Result.UploadAborted does not take a
// server's word for an abort. Committing a committed file again, through a
// server that acknowledges aborts of completed uploads, reports no abort and
// sends none; a left-over upload of a duplicate attempt with the same bytes
// is still aborted and reported. With and without the preflight (without it,
// the already-committed path has not listed the upload before it settles).
func TestUploadAbortedOnlyWhenOpen(t *testing.T) {
	for name, o := range map[string]committer.Options{
		"Preflight": {}, "SkipPreflight": {SkipPreflight: true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			data := payload(41, 5000)
			cr := e.write("out/aborts", data, 1)
			dup := e.write("out/aborts", data, 1)
			client := &abortAlwaysOK{S3: e.client}
			c := newCommitter(t, client, o)
			if res, err := c.Commit(ctx, cr); err != nil || !res.Created {
				t.Fatalf("first commit: %+v %v", res, err)
			}
			for name, commit := range map[string]func(context.Context, recoverable.CommitToken) (committer.Result, error){
				"Commit": c.Commit, "CommitAfterRecovery": c.CommitAfterRecovery,
			} {
				before := client.aborts.Load()
				res, err := commit(ctx, cr)
				if err != nil {
					t.Fatalf("%s again: %v", name, err)
				}
				checkResult(t, res, cr)
				if !res.AlreadyCommitted || res.UploadAborted || res.Warning != nil {
					t.Fatalf("%s again: %+v", name, res)
				}
				if n := client.aborts.Load() - before; n != 0 {
					t.Fatalf("%s again sent %d aborts for a completed upload", name, n)
				}
			}
			res, err := c.CommitAfterRecovery(ctx, dup)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, dup)
			if !res.AlreadyCommitted || !res.UploadAborted {
				t.Fatalf("duplicate: %+v", res)
			}
			if e.uploadExists(dup) {
				t.Fatal("the duplicate's upload is still open")
			}
			e.mustHold("out/aborts", data)
		})
	}
}
