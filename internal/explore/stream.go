package explore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3mem"
	"github.com/s3once/s3once/recoverable"
)

const (
	attemptPrefix = "attempt-"
	fileKey       = "out/file"
	outPrefix     = "out/"
	maxAttempts   = 4
)

// The objects that are not s3once's: they must come out of every schedule
// untouched.
var decoys = map[string][]byte{
	"decoy/object":     []byte("not s3once's"),
	"out/file.decoy":   []byte("a neighbour of the file"),
	"out/other":        []byte("another writer's file"),
	".s3once-decoy/x":  []byte("looks like staging, is not"),
	"out/file/child":   []byte("a child of the file's key"),
	"staging-like/abc": []byte("unrelated"),
}

// StreamWorkload is one file written through a recoverable stream and
// committed by the committer, the way a runner drives them: persist twice
// (checkpoints), close, commit. A crashed or failed attempt is followed by
// another, with a new client, from the last checkpoint it took: the commit
// token if there is one (CommitAfterRecovery), else the resume token
// (Recover, then write the rest again), else from the start.
type StreamWorkload struct {
	// Data is the file's bytes; Cuts the offsets of the persists.
	Data []byte
	Cuts []int
	// duplicateCommit commits the file twice at once (the finalization fast
	// path and the commit stage), from two clients.
	duplicateCommit bool
	// dropTail makes recovery forget the token's tail, reintroducing the
	// bug of Flink's S3 writer, to show the explorer catches it.
	dropTail bool
}

// DefaultStream is the small workload of the quick bound: a file of three
// full parts and a tail, with persists after 1.3 and 2.6 parts (both with
// tails in side objects).
func DefaultStream() StreamWorkload {
	const p = recoverable.MinPartSize
	data := make([]byte, 3*p+p/5)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	return StreamWorkload{Data: data, Cuts: []int{p + 3*p/10, 2*p + 3*p/5}}
}

// outcome is what one schedule did and what was wrong with it.
type outcome struct {
	attempts   int
	errs       []string // errors of attempts whose client had not crashed
	violations []string
}

// runner carries a workload's checkpoints across attempts.
type runner struct {
	w      StreamWorkload
	fake   *s3mem.Fake
	bucket string
	rr     *recoverable.ResumeRecoverable
	cr     *recoverable.CommitRecoverable
	done   bool
	out    outcome
	// checkpointed are the uploads a checkpoint referenced.
	checkpointed map[string]bool
	// lossClaims are the attempts that reported the file's data lost.
	lossClaims []string
}

// run drives attempts until the file is committed or maxAttempts is spent.
func (r *runner) run() {
	for n := 1; n <= maxAttempts && !r.done; n++ {
		r.out.attempts = n
		name := fmt.Sprintf("%s%d", attemptPrefix, n)
		ctx, cancel := context.WithCancel(context.Background())
		err := r.attempt(ctx, name, n)
		cancel() // the process is gone: whatever it still runs stops
		if err != nil && !r.fake.Crashed(name) {
			r.out.errs = append(r.out.errs, fmt.Sprintf("%s: %v", name, err))
			if errors.Is(err, committer.ErrDataLost) {
				r.lossClaims = append(r.lossClaims, name)
			}
		}
	}
	if !r.done {
		r.out.violations = append(r.out.violations, fmt.Sprintf("not committed after %d attempts: %v", maxAttempts, r.out.errs))
	}
}

// attempt is one process: it returns at the first error, or when its client
// has crashed (a dead process does not go on).
func (r *runner) attempt(ctx context.Context, name string, n int) error {
	client := r.fake.NewClient(s3mem.ClientOptions{Name: name})
	dead := func() bool { return r.fake.Crashed(name) }
	cm, err := committer.New(client, committer.Options{})
	if err != nil {
		return err
	}
	if r.cr != nil {
		_, err := cm.CommitAfterRecovery(ctx, *r.cr)
		if err == nil && !dead() {
			r.done = true
		}
		return err
	}
	w, err := recoverable.NewWriter(client, recoverable.Options{PartSize: recoverable.MinPartSize, InlineTailMax: -1, Concurrency: 2})
	if err != nil {
		return err
	}
	var s *recoverable.Stream
	pos := 0
	if r.rr == nil {
		s, err = w.Open(ctx, r.bucket, fileKey, recoverable.ObjectOptions{})
	} else {
		tok := *r.rr
		if r.w.dropTail {
			tok.Tail = recoverable.Tail{} // the bug Flink's writer had
		}
		s, err = w.Recover(ctx, tok)
		pos = int(r.rr.Size())
	}
	if err != nil || dead() {
		return err
	}
	for _, cut := range r.w.Cuts {
		if cut <= pos {
			continue
		}
		if _, err := s.Write(r.w.Data[pos:cut]); err != nil || dead() {
			return err
		}
		pos = cut
		rr, err := s.Persist(ctx)
		if err != nil || dead() {
			return err
		}
		r.rr = &rr // the runner takes the checkpoint
		r.checkpointed[rr.UploadID] = true
	}
	if _, err := s.Write(r.w.Data[pos:]); err != nil || dead() {
		return err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil || dead() {
		return err
	}
	r.cr = &cr
	r.checkpointed[cr.UploadID] = true
	commit := cm.Commit
	if n > 1 {
		commit = cm.CommitAfterRecovery
	}
	if r.w.duplicateCommit {
		return r.commitTwice(ctx, name, commit, cr)
	}
	if _, err := commit(ctx, cr); err != nil || dead() {
		return err
	}
	r.done = true
	return nil
}

// commitTwice commits cr from this attempt and, at the same time, from a
// commit stage with a client of its own, as the sink's finalization fast
// path and its commit stage may. Both must succeed.
func (r *runner) commitTwice(ctx context.Context, name string, commit func(context.Context, recoverable.CommitRecoverable) (committer.Result, error), cr recoverable.CommitRecoverable) error {
	stage := name + "-stage"
	cm2, err := committer.New(r.fake.NewClient(s3mem.ClientOptions{Name: stage}), committer.Options{})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { _, errs[0] = commit(ctx, cr) })
	wg.Go(func() { _, errs[1] = cm2.CommitAfterRecovery(ctx, cr) })
	wg.Wait()
	if r.fake.Crashed(name) {
		return errors.Join(errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.done = true
	return nil
}

// check looks at the server after the run, and after a sweep.
func (r *runner) check(ctx context.Context) {
	c := r.fake.NewClient(s3mem.ClientOptions{Name: "check"})
	bad := func(format string, a ...any) { r.out.violations = append(r.out.violations, fmt.Sprintf(format, a...)) }
	read := func(key string) ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.bucket, Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	if r.done {
		got, err := read(fileKey)
		switch {
		case err != nil:
			bad("committed, yet %s cannot be read: %v", fileKey, err)
		case !bytes.Equal(got, r.w.Data):
			bad("%s holds %d bytes (CRC %016x), the run wrote %d (CRC %016x)", fileKey, len(got), recoverable.CRC64(got), len(r.w.Data), recoverable.CRC64(r.w.Data))
		}
	}
	for k, want := range decoys {
		if got, err := read(k); err != nil || !bytes.Equal(got, want) {
			bad("object %s, not s3once's, was touched (%v)", k, err)
		}
	}
	// A lost-data claim is true only if the upload is gone; who destroyed
	// it is then the violation below.
	if len(r.lossClaims) > 0 && r.cr != nil {
		if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &r.bucket, Key: aws.String(fileKey), UploadId: &r.cr.UploadID}); err == nil {
			bad("%v reported the data lost, yet upload %s is in place", r.lossClaims, r.cr.UploadID)
		}
	}
	for _, call := range r.fake.Calls() {
		if !scheduled(call.Client) {
			continue
		}
		if call.Op == s3mem.AbortMultipartUpload && call.Applied && call.Status < 300 && r.checkpointed[call.UploadID] && !r.done {
			bad("%s aborted upload %s, which a checkpoint references (only commit, cleanup and the sweep may destroy it)", call.Client, call.UploadID)
		}
		if call.Key == "" {
			continue
		}
		if call.Key != fileKey && !strings.HasPrefix(call.Key, recoverable.DefaultStagingPrefix) {
			bad("%s %s on %s, outside the file's key and the staging prefix", call.Client, call.Op, call.Key)
		}
	}
	// A sweep well past the run leaves no upload and no side object.
	r.fake.Advance(2 * time.Hour)
	cm, err := committer.New(c, committer.Options{})
	if err != nil {
		bad("committer: %v", err)
		return
	}
	if _, err := cm.Sweep(ctx, committer.SweepOptions{Bucket: r.bucket, Prefix: outPrefix, OlderThan: time.Hour}); err != nil {
		bad("sweep: %v", err)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &r.bucket})
	if err != nil || len(ups.Uploads) != 0 {
		bad("after the sweep: %d uploads left (%v)", len(ups.Uploads), err)
	}
	objs, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &r.bucket, Prefix: aws.String(recoverable.DefaultStagingPrefix)})
	if err != nil || len(objs.Contents) != 0 {
		bad("after the sweep: %d side objects left (%v)", len(objs.Contents), err)
	}
	for k := range decoys {
		if _, err := read(k); err != nil {
			bad("the sweep removed %s, not s3once's: %v", k, err)
		}
	}
}
