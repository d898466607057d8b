package explore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

const (
	attemptPrefix = "attempt-"
	outPrefix     = "out/"
	staging       = s3call.DefaultStagingPrefix
	// maxAttempts bounds the processes of a schedule: two faults, the
	// rollback, and a margin.
	maxAttempts = 6
)

// FileKey is the key of file i of n, an s3once output file name.
func FileKey(i, n int) string {
	return ownkeys.FileKey(outPrefix, "", ownkeys.FileName{Window: "global", Shard: i, Shards: n, Ext: ".bin"})
}

// decoysFor are the objects that are not s3once's: they must come out of
// every schedule untouched, sweep included. Neighbours of the first file's
// key, a child of it, look-alikes of the staging prefix, and a file with an
// s3once name of another job's shard.
func decoysFor(first string) map[string][]byte {
	return map[string][]byte{
		"decoy/object":     []byte("not s3once's"),
		first + ".decoy":   []byte("a neighbour of the file"),
		"out/other":        []byte("another writer's file"),
		".s3once-decoy/x":  []byte("looks like staging, is not"),
		first + "/child":   []byte("a child of the file's key"),
		"staging-like/abc": []byte("unrelated"),
		ownkeys.FileKey(outPrefix, "", ownkeys.FileName{Window: "global", Shard: 7, Shards: 9, Ext: ".bin"}): []byte("another job's file"),
	}
}

// StreamWorkload is files written one after the other through recoverable
// streams and committed by the committer, the way a runner drives them:
// persist at each cut (checkpoints), close, commit. A crashed or failed
// attempt is followed by another, with a new client, from the last
// checkpoint it took, per file: the commit token if there is one
// (CommitAfterRecovery), else the resume token (Recover, then write the
// rest again), else from the start. A recovery that finds the token's
// upload gone or its tail or parts altered rewrites the file from its
// first byte under a new upload, as the sink does.
type StreamWorkload struct {
	// Data are the files' bytes; Cuts the offsets of the persists (the same
	// for every file).
	Data [][]byte
	Cuts []int
	// duplicateCommit commits the last file twice at once (the finalization
	// fast path and the commit stage), from two clients.
	duplicateCommit bool
	// rollback: once the first file is committed, the job restarts from an
	// older checkpoint, the one holding the first file's first resume
	// token (Flink's rollback); that file is then rewritten, and its commit
	// finds it committed already.
	rollback bool
	// Bug switches a past bug back on for the run (internal/mutant), to
	// show the explorer catches it; 0 runs the code as it is.
	Bug mutant.Bug
}

// fileData is n pseudo-random bytes, different for each seed: the low
// byte of each step of a xorshift generator. They are stored eight at a
// time, which the race detector checks eight times faster than bytes.
func fileData(n int, seed uint64) []byte {
	data := make([]byte, n)
	x := 0x9e3779b97f4a7c15 ^ seed*0xbf58476d1ce4e5b9
	next := func() byte {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return byte(x)
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		var w uint64
		for j := range 8 {
			w |= uint64(next()) << (8 * j)
		}
		binary.LittleEndian.PutUint64(data[i:], w)
	}
	for ; i < n; i++ {
		data[i] = next()
	}
	return data
}

// fileSize is the size of every file of the workloads: three full parts
// and a tail.
const fileSize = 3*recoverable.MinPartSize + recoverable.MinPartSize/5

// theFiles are the workloads' files, made once per process and shared by
// every schedule (nothing writes them: a stream copies what it is given).
// Their CRCs, taken when they are made, let every schedule's check confirm
// they are still the bytes that were made.
var theFiles = sync.OnceValue(func() (files [2]sharedFile) {
	for i := range files {
		d := fileData(fileSize, uint64(i))
		files[i] = sharedFile{data: d, crc: crc64nvme.Checksum(d)}
	}
	return files
})

type sharedFile struct {
	data []byte
	crc  uint64
}

// DefaultStream is the small workload of the mutation tests and the
// one-file bounds: a file of three full parts and a tail, with persists
// after 1.3 and 2.6 parts (both with tails in side objects).
func DefaultStream() StreamWorkload {
	const p = recoverable.MinPartSize
	return StreamWorkload{Data: [][]byte{theFiles()[0].data}, Cuts: []int{p + 3*p/10, 2*p + 3*p/5}}
}

// IssueWorkload is the workload the exploration's bounds are stated for:
// two files of three full parts and a tail, two persists each, one
// rollback (the first file, from its older token, after it was committed)
// and one duplicate commit (the second file).
func IssueWorkload() StreamWorkload {
	w := DefaultStream()
	w.Data = append(w.Data, theFiles()[1].data)
	w.rollback = true
	w.duplicateCommit = true
	return w
}

// Name tells the workload's shape, as replays spell it.
func (w StreamWorkload) Name() string {
	switch {
	case len(w.Data) == 1 && !w.duplicateCommit && !w.rollback:
		return "one"
	case len(w.Data) == 1 && w.duplicateCommit && !w.rollback:
		return "one-duplicate"
	case len(w.Data) == 2 && w.duplicateCommit && w.rollback:
		return "issue"
	}
	return fmt.Sprintf("files%d-dup%t-rollback%t", len(w.Data), w.duplicateCommit, w.rollback)
}

// WorkloadNamed returns the workload Name gives name.
func WorkloadNamed(name string) (StreamWorkload, error) {
	w := DefaultStream()
	switch name {
	case "one", "":
	case "one-duplicate":
		w.duplicateCommit = true
	case "issue":
		w = IssueWorkload()
	default:
		return w, fmt.Errorf("unknown workload %q", name)
	}
	return w, nil
}

// outcome is what one schedule did and what was wrong with it.
type outcome struct {
	attempts   int
	rewrites   int
	errs       []string // errors of attempts whose client had not crashed
	violations []string
}

// file is one file's state across attempts: its checkpoints.
type file struct {
	i    int
	key  string
	data []byte
	rr   *recoverable.ResumeToken // latest checkpoint
	rrs  []recoverable.ResumeToken
	cr   *recoverable.CommitToken
	done bool
}

// errRolledBack ends the attempt in which the runner rolls back.
var errRolledBack = errors.New("the job restarts from an older checkpoint")

// runner carries a workload's checkpoints across attempts.
type runner struct {
	w          StreamWorkload
	fake       *s3mem.Fake
	bucket     string
	files      []*file
	rolledBack bool
	out        outcome
	// checkpointed maps the uploads a checkpoint referenced to their file.
	checkpointed map[string]int
	// lossClaims are the attempts that reported a file's data lost.
	lossClaims map[int][]string
	// sweepFound are the violations of the sweeps between steps; only the
	// driving goroutine touches them.
	sweepFound []string
}

func newRunner(w StreamWorkload, fake *s3mem.Fake, bucket string) *runner {
	r := &runner{w: w, fake: fake, bucket: bucket, checkpointed: map[string]int{}, lossClaims: map[int][]string{}}
	for i, d := range w.Data {
		r.files = append(r.files, &file{i: i, key: FileKey(i, len(w.Data)), data: d})
	}
	return r
}

func (r *runner) allDone() bool {
	for _, f := range r.files {
		if !f.done {
			return false
		}
	}
	return true
}

// run drives attempts until every file is committed or maxAttempts is
// spent.
func (r *runner) run() {
	for n := 1; n <= maxAttempts && !r.allDone(); n++ {
		r.out.attempts = n
		name := fmt.Sprintf("%s%d", attemptPrefix, n)
		// Without jitter, a schedule's waits (and so the number of polls a
		// committer makes while a late completion lands) depend on its plan
		// alone: a replay makes the same releases.
		ctx, cancel := context.WithCancel(s3call.WithoutJitter(context.Background()))
		i, err := r.attempt(ctx, name, n)
		cancel() // the process is gone: whatever it still runs stops
		if err != nil && !errors.Is(err, errRolledBack) && !r.fake.Crashed(name) {
			r.out.errs = append(r.out.errs, fmt.Sprintf("%s: %v", name, err))
			if errors.Is(err, committer.ErrDataLost) {
				r.lossClaims[i] = append(r.lossClaims[i], name)
			}
		}
	}
	if !r.allDone() {
		r.out.violations = append(r.out.violations, fmt.Sprintf("not committed after %d attempts: %v", maxAttempts, r.out.errs))
	}
}

// processClient is the S3 client of one process (an attempt, a commit
// stage), as s3call.NewClient builds it: with a Throttle of its own, so
// that a SlowDown answer meets the shared backoff and Do's budget.
func (r *runner) processClient(name string) *s3.Client {
	return r.fake.NewClient(s3mem.ClientOptions{Name: name, Configure: s3call.NewThrottle(0).Apply})
}

// attempt is one process: it returns at the first error, with the index of
// the file it was on, or when its client has crashed (a dead process does
// not go on).
func (r *runner) attempt(ctx context.Context, name string, n int) (int, error) {
	client := r.processClient(name)
	cm, err := committer.New(client, committer.Options{Logger: quiet})
	if err != nil {
		return 0, err
	}
	w, err := recoverable.NewWriter(client, recoverable.Options{PartSize: recoverable.MinPartSize, InlineTailMax: -1, Concurrency: 2})
	if err != nil {
		return 0, err
	}
	for _, f := range r.files {
		if f.done {
			continue
		}
		if err := r.file(ctx, name, n, client, cm, w, f); err != nil || r.fake.Crashed(name) {
			return f.i, err
		}
		if r.w.rollback && f.i == 0 && !r.rolledBack && len(f.rrs) > 0 {
			// The job fails now and the runner restores the checkpoint
			// that held this file's first resume token: the file is open
			// again there, and no later file was begun.
			r.rolledBack = true
			old := f.rrs[0]
			f.rr, f.cr, f.done = &old, nil, false
			return f.i, errRolledBack
		}
	}
	return 0, nil
}

// file writes (or recovers, or commits) one file in this attempt.
func (r *runner) file(ctx context.Context, name string, n int, client *s3.Client, cm *committer.Committer, w *recoverable.Writer, f *file) error {
	dead := func() bool { return r.fake.Crashed(name) }
	if f.cr != nil {
		_, err := cm.CommitAfterRecovery(ctx, *f.cr)
		if err == nil && !dead() {
			f.done = true
		}
		return err
	}
	var s *recoverable.Stream
	var err error
	pos, rewrite := 0, false
	if f.rr != nil {
		s, err = w.Recover(ctx, *f.rr)
		if err == nil {
			pos = int(f.rr.Size())
		} else if !dead() && recoverable.IsArtifactLost(err) {
			r.rewriteJustified(ctx, f, err)
			r.out.rewrites++
			rewrite = true
			f.rr = nil
			s, err = w.Open(ctx, r.bucket, f.key, recoverable.ObjectOptions{})
		}
	} else {
		s, err = w.Open(ctx, r.bucket, f.key, recoverable.ObjectOptions{})
	}
	if err != nil || dead() {
		return err
	}
	for _, cut := range r.w.Cuts {
		if cut <= pos {
			continue
		}
		if _, err := s.Write(f.data[pos:cut]); err != nil || dead() {
			return err
		}
		pos = cut
		rr, err := s.Persist(ctx)
		if dead() {
			return err
		}
		if err != nil {
			// A failed Persist is no checkpoint, and it leaves the stream
			// usable: the writer goes on and checkpoints at the next cut.
			r.out.errs = append(r.out.errs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		f.rr = &rr // the runner takes the checkpoint
		f.rrs = append(f.rrs, rr)
		r.checkpointed[rr.UploadID] = f.i
	}
	if _, err := s.Write(f.data[pos:]); err != nil || dead() {
		return err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil || dead() {
		return err
	}
	f.cr = &cr
	r.checkpointed[cr.UploadID] = f.i
	commit := cm.Commit
	if n > 1 || rewrite {
		commit = cm.CommitAfterRecovery
	}
	if r.w.duplicateCommit && f.i == len(r.files)-1 {
		return r.commitTwice(ctx, name, commit, f)
	}
	if _, err := commit(ctx, cr); err != nil || dead() {
		return err
	}
	f.done = true
	return nil
}

// rewriteJustified checks a recovery that calls for a rewrite: nothing but
// s3once touches the server here, so a checkpoint may only have lost its
// artifacts to a commit of its file (the rollback, a crash after the
// completion). A checkpoint whose upload is still open yet does not
// recover was damaged by s3once itself.
func (r *runner) rewriteJustified(ctx context.Context, f *file, err error) {
	c := r.fake.NewClient(s3mem.ClientOptions{Name: "check"})
	if _, lerr := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &r.bucket, Key: &f.key, UploadId: &f.rr.UploadID}); lerr == nil {
		r.out.violations = append(r.out.violations, fmt.Sprintf("recovery of %s failed although its upload %s is open (a checkpoint damaged by s3once): %v", f.key, f.rr.UploadID, err))
	}
}

// commitTwice commits f's token from this attempt and, at the same time,
// from a commit stage with a client of its own, as the sink's finalization
// fast path and its commit stage may. Both must succeed.
func (r *runner) commitTwice(ctx context.Context, name string, commit func(context.Context, recoverable.CommitToken) (committer.Result, error), f *file) error {
	stage := name + "-stage"
	cm2, err := committer.New(r.processClient(stage), committer.Options{Logger: quiet})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { _, errs[0] = commit(ctx, *f.cr) })
	wg.Go(func() { _, errs[1] = cm2.CommitAfterRecovery(ctx, *f.cr) })
	wg.Wait()
	if r.fake.Crashed(name) {
		return errors.Join(errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	f.done = true
	return nil
}

// check looks at the server after the run, and after a sweep.
func (r *runner) check(ctx context.Context, decoys map[string][]byte) {
	// Two hours on: whatever the run left landing has landed (a lagged
	// completion shows), and the sweep below may take anything left over.
	r.fake.Advance(2 * time.Hour)
	c := r.fake.NewClient(s3mem.ClientOptions{Name: "check"})
	bad := func(format string, a ...any) { r.out.violations = append(r.out.violations, fmt.Sprintf(format, a...)) }
	r.out.violations = append(r.out.violations, r.sweepFound...)
	read := func(key string) ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.bucket, Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	for _, f := range r.files {
		if f.i < len(theFiles()) && crc64nvme.Checksum(f.data) != theFiles()[f.i].crc {
			bad("the bytes of file %d, shared by every schedule, were changed (a stream wrote into what it was given)", f.i)
		}
	}
	ours := map[string]bool{}
	for _, f := range r.files {
		ours[f.key] = true
		// The files are compared where the server holds them: reading 16
		// MiB back through a client would copy them twice more, which is
		// most of a schedule's cost under -race.
		stored, found := r.fake.Stored(r.bucket, f.key)
		size, crc := storedSum(stored)
		same := found && equalChunks(stored, f.data)
		switch {
		case !f.done && found:
			bad("%s was never committed, yet holds %d bytes", f.key, size)
		case !f.done:
		case !found:
			bad("committed, yet %s is not there", f.key)
		case !same:
			bad("%s holds %d bytes (CRC %016x), the run wrote %d (CRC %016x)", f.key, size, crc, len(f.data), crc64nvme.Checksum(f.data))
		}
		// A lost-data claim is true only if the upload is gone and the file
		// never shows; who destroyed it is then the violation below.
		if claims := r.lossClaims[f.i]; len(claims) > 0 {
			if f.cr != nil {
				if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &r.bucket, Key: &f.key, UploadId: &f.cr.UploadID}); err == nil {
					bad("%v reported %s lost, yet upload %s is in place", claims, f.key, f.cr.UploadID)
				}
			}
			if same {
				bad("%v reported the data of %s lost, yet it holds the file, byte-exact", claims, f.key)
			}
		}
	}
	// No file missing, none duplicated: the output holds the files and the
	// decoys, nothing else.
	var extra []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &r.bucket, Prefix: aws.String(outPrefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			bad("list the output: %v", err)
			break
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); !ours[k] && decoys[k] == nil {
				extra = append(extra, k)
			}
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		bad("objects in the output that are neither the files nor the decoys: %v", extra)
	}
	for k, want := range decoys {
		if got, err := read(k); err != nil || !bytes.Equal(got, want) {
			bad("object %s, not s3once's, was touched (%v)", k, err)
		}
	}
	for _, call := range r.fake.Calls() {
		if !scheduled(call.Client) {
			continue
		}
		if i, ok := r.checkpointed[call.UploadID]; ok && call.Op == s3fault.AbortMultipartUpload && call.Applied && call.Status < 300 && !r.files[i].done {
			bad("%s aborted upload %s, which a checkpoint references (only commit, cleanup and the sweep may destroy it)", call.Client, call.UploadID)
		}
		if call.Key == "" {
			continue
		}
		if !ours[call.Key] && !ownkeys.IsOwnStaging(staging, call.Key) {
			bad("%s %s on %s, not one of s3once's own keys (the files, side objects and probes)", call.Client, call.Op, call.Key)
		}
	}
	// A sweep well past the run leaves no upload and no side object.
	cm, err := committer.New(c, committer.Options{Logger: quiet})
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
	objs, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &r.bucket, Prefix: aws.String(staging)})
	if err != nil || len(objs.Contents) != 0 {
		bad("after the sweep: %d side objects left (%v)", len(objs.Contents), err)
	}
	for k := range decoys {
		if _, err := read(k); err != nil {
			bad("the sweep removed %s, not s3once's: %v", k, err)
		}
	}
}

// quiet drops the committer's notes of long waits: fake time makes them
// routine here.
var quiet = slog.New(slog.DiscardHandler)

// sweepBetween runs the committer's sweep at a quiescent point of the run,
// with a cutoff at the run's start by the server's clock (younger than
// committer.MinSweepAge, so Force): everything the run made is younger than
// the cutoff, so the sweep must remove nothing but left-overs (uploads of
// keys that already hold their file, which can never complete, and their
// side objects), however the run's requests are interleaved with it; what
// else it removed would be a checkpoint's upload or tail, or a file's
// upload before its commit. The run's own checks then show that removing
// the left-overs cost no file its bytes.
func (r *runner) sweepBetween(ctx context.Context, step int, cutoff time.Time) {
	c := r.fake.NewClient(s3mem.ClientOptions{Name: "sweeper"})
	cm, err := committer.New(c, committer.Options{Logger: quiet})
	if err != nil {
		r.sweepFound = append(r.sweepFound, fmt.Sprintf("committer: %v", err))
		return
	}
	rep, err := cm.Sweep(ctx, committer.SweepOptions{Bucket: r.bucket, Prefix: outPrefix, Cutoff: cutoff, Force: true})
	if err != nil {
		r.sweepFound = append(r.sweepFound, fmt.Sprintf("sweep before release %d: %v", step, err))
		return
	}
	young := rep.Uploads.Removed - rep.Uploads.LeftOver + rep.SideObjects.Removed - rep.SideObjects.LeftOver
	if young > 0 || rep.Uploads.Failed+rep.SideObjects.Failed > 0 {
		r.sweepFound = append(r.sweepFound, fmt.Sprintf("a sweep before release %d with its cutoff at the run's start removed %d uploads and %d side objects (%d of them left-overs at committed keys; %d failed) of a run younger than the cutoff",
			step, rep.Uploads.Removed, rep.SideObjects.Removed, rep.Uploads.LeftOver+rep.SideObjects.LeftOver, rep.Uploads.Failed+rep.SideObjects.Failed))
	}
}

// equalChunks tells whether the concatenation of chunks is want, byte for
// byte. It compares them as strings over the same memory (nothing writes
// either any more): the race detector checks every byte a bytes.Equal
// reads, which costs more than a schedule's own checks.
func equalChunks(chunks [][]byte, want []byte) bool {
	for _, c := range chunks {
		if len(c) > len(want) || !sameBytes(c, want[:len(c)]) {
			return false
		}
		want = want[len(c):]
	}
	return len(want) == 0
}

// sameBytes is bytes.Equal on strings viewing a and b, which the race
// detector does not instrument; a and b must not change meanwhile.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return unsafe.String(&a[0], len(a)) == unsafe.String(&b[0], len(b))
}

// storedSum is the size and CRC64NVME of the concatenation of chunks.
func storedSum(chunks [][]byte) (int64, uint64) {
	var n int64
	var crc uint64
	for _, c := range chunks {
		n += int64(len(c))
		crc = crc64nvme.Update(crc, c)
	}
	return n, crc
}
