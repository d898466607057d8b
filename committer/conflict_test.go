package committer_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

// conflictCodes are the 409 codes a completion may meet: the conditional
// conflict, the transient OperationAborted, and one the committer has never
// heard of.
var conflictCodes = []string{"ConditionalRequestConflict", "OperationAborted", "SomeFutureConflict"}

// conflictFirst answers the first n completions with 409 code, unapplied;
// later ones go through. With discard, the 409 also discards the upload, as
// S3 may after a conflicting conditional write.
type conflictFirst struct {
	committer.S3
	code    string
	n       int32
	discard bool
	seen    atomic.Int32
}

func (c *conflictFirst) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if c.seen.Add(1) <= c.n {
		if c.discard {
			if _, err := c.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId}); err != nil {
				return nil, err
			}
		}
		return nil, s3fault.APIError(s3fault.CompleteMultipartUpload, http.StatusConflict, c.code, "A conflicting operation occurred.")
	}
	return c.S3.CompleteMultipartUpload(ctx, in, opts...)
}

// One 409 of any code on CompleteMultipartUpload: the upload survives it and
// the file commits, by Commit and by CommitAfterRecovery.
func TestCommitSurvivesOne409OfEachCode(t *testing.T) {
	e := newEnv(t)
	for _, code := range conflictCodes {
		for _, after := range []bool{false, true} {
			name := map[bool]string{false: "Commit", true: "CommitAfterRecovery"}[after]
			t.Run(code+"/"+name, func(t *testing.T) {
				k := "out/409-" + code + "-" + name
				data := payload(700, 6<<20)
				cr := e.write(k, data, 1)
				f := &conflictFirst{S3: e.client, code: code, n: 1}
				c := newCommitter(t, f, committer.Options{})
				commit := c.Commit
				if after {
					commit = c.CommitAfterRecovery
				}
				res, err := commit(context.Background(), cr)
				if err != nil {
					t.Fatalf("one 409 %s: %v (upload still open: %v)", code, err, e.uploadExists(cr))
				}
				checkResult(t, res, cr)
				if !res.Created || res.UploadAborted {
					t.Fatalf("result %+v", res)
				}
				if f.seen.Load() != 2 {
					t.Fatalf("%d completions, want the 409 and one more", f.seen.Load())
				}
				e.mustHold(k, data)
				if e.uploadExists(cr) {
					t.Fatal("upload still open after the commit")
				}
			})
		}
	}
}

// Every completion answered 409: the commit gives up with ErrConflict and
// leaves the upload intact, so the same token commits once the conflicts
// stop.
func TestCommitConflictIsTyped(t *testing.T) {
	e := newEnv(t)
	for _, code := range conflictCodes {
		t.Run(code, func(t *testing.T) {
			k := "out/conflict-" + code
			data := payload(15, 100)
			cr := e.write(k, data, 0)
			f := &conflictFirst{S3: e.client, code: code, n: 1 << 30}
			c := newCommitter(t, f, committer.Options{MaxAttempts: 3, MaxRounds: 3})
			_, err := c.Commit(context.Background(), cr)
			if !errors.Is(err, committer.ErrConflict) {
				t.Fatalf("want ErrConflict, got %v", err)
			}
			if re := mustBeTyped(t, err, cr); re.Hint == "" {
				t.Fatal("no hint for the operator")
			}
			if f.seen.Load() != 3 {
				t.Fatalf("%d completions, want one per round (3)", f.seen.Load())
			}
			if !e.uploadExists(cr) {
				t.Fatal("the token's upload was destroyed")
			}
			res, err := newCommitter(t, e.client, committer.Options{}).CommitAfterRecovery(context.Background(), cr)
			if err != nil || !res.Created {
				t.Fatalf("commit after the conflicts: %+v %v", res, err)
			}
			e.mustHold(k, data)
		})
	}
}

// A 409 after which the server discarded the upload, with nothing ever at
// the key: after the settle window, ErrRewriteRequired (not ErrDataLost) for
// the conditional conflict; a transient code that loses the upload is the
// plain loss it looks like.
func TestConflictThatDiscardsTheUpload(t *testing.T) {
	for _, code := range conflictCodes {
		t.Run(code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := s3mem.New(s3mem.Options{})
				client, cr, _ := memFile(t, fake, "out/discarded")
				f := &conflictFirst{S3: client, code: code, n: 1, discard: true}
				c, err := committer.New(f, committer.Options{CompleteTimeout: 10 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = c.Commit(context.Background(), cr)
				want, other := committer.ErrRewriteRequired, committer.ErrDataLost
				if code != "ConditionalRequestConflict" {
					want, other = other, want
				}
				if !errors.Is(err, want) || errors.Is(err, other) {
					t.Fatalf("want %v, got %v", want, err)
				}
				mustBeTyped(t, err, cr)
				if waited := time.Since(start); waited < 10*time.Minute {
					t.Fatalf("gave up after %v, inside the settle window", waited)
				}
				if _, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key)}); !s3call.IsNotFound(err) {
					t.Fatalf("an object appeared: %v", err)
				}
			})
		})
	}
}

// A 409 ConditionalRequestConflict because another upload won the key at
// that moment: the commit meets the winner and compares, never aborting its
// upload before it knows.
func TestConflictWithAWinnerAtTheKey(t *testing.T) {
	e := newEnv(t)
	for _, same := range []bool{true, false} {
		name := map[bool]string{true: "same-bytes", false: "other-bytes"}[same]
		t.Run(name, func(t *testing.T) {
			k := "out/409-winner-" + name
			data := payload(710, 4000)
			theirs := data
			if !same {
				theirs = payload(711, 4000)
			}
			winner := e.write(k, theirs, 0)
			cr := e.write(k, data, 0)
			w := &winsOnComplete{S3: e.client, winner: winner, e: e}
			c := newCommitter(t, w, committer.Options{})
			res, err := c.Commit(context.Background(), cr)
			if same {
				if err != nil || !res.AlreadyCommitted || !res.UploadAborted {
					t.Fatalf("same bytes: %+v %v", res, err)
				}
			} else if !errors.Is(err, committer.ErrKeyTaken) {
				t.Fatalf("other bytes: want ErrKeyTaken, got %v", err)
			}
			e.mustHold(k, theirs)
			if e.uploadExists(cr) {
				t.Fatal("the losing upload is still open")
			}
		})
	}
}

// winsOnComplete commits another upload to the key when the first
// completion arrives, and answers that completion 409.
type winsOnComplete struct {
	committer.S3
	winner recoverable.CommitToken
	e      *env
	done   atomic.Bool
}

func (w *winsOnComplete) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if w.done.CompareAndSwap(false, true) {
		c, err := committer.New(w.e.client, committer.Options{SkipPreflight: true})
		if err != nil {
			return nil, err
		}
		if _, err := c.Commit(ctx, w.winner); err != nil {
			return nil, err
		}
		return nil, s3fault.APIError(s3fault.CompleteMultipartUpload, http.StatusConflict, "ConditionalRequestConflict", "A conflicting operation occurred.")
	}
	return w.S3.CompleteMultipartUpload(ctx, in, opts...)
}
