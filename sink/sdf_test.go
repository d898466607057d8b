package sink

import (
	"bytes"
	"context"
	"fmt"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/recoverable"
)

// fakeFinalizer keeps a bundle's finalization callbacks, as a runner does
// until the bundle is durable.
type fakeFinalizer struct {
	mu  sync.Mutex
	cbs []func() error
}

func (f *fakeFinalizer) RegisterCallback(_ time.Duration, cb func() error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cbs = append(f.cbs, cb)
}

func (f *fakeFinalizer) run(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cb := range f.cbs {
		if err := cb(); err != nil {
			t.Errorf("finalization callback failed: %v", err)
		}
	}
}

// randomBatch makes a sorted batch of n text records of 1 to maxLen bytes.
func randomBatch(seed uint64, n, maxLen int) batch {
	r := rand.New(rand.NewPCG(seed, 7))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.;:-_"
	b := batch{Window: "global", Shard: 1, Shards: 3, Destination: "d/e", SubBatches: 1}
	for i := 0; i < n; i++ {
		l := make([]byte, 1+r.IntN(maxLen))
		for j := range l {
			l[j] = alphabet[r.IntN(len(alphabet))]
		}
		b.Lines = append(b.Lines, append(l, '\n'))
	}
	slices.SortFunc(b.Lines, bytes.Compare)
	return b
}

// runner drives writeFilesFn the way a runner does, without one: it makes the
// initial restriction, processes it on a fresh DoFn, and when the DoFn
// self-checkpoints it splits at fraction 0, encodes the residual (and the
// element) with the real coders, throws the DoFn away, decodes, and goes on
// with the residual on a new DoFn. It can also crash a bundle: the DoFn's S3
// calls start failing after a random number of them (the worker is gone),
// its outputs and callbacks are dropped, and the same restriction is redone
// on a new DoFn.
type runner struct {
	t      testing.TB
	s      settings
	client *s3.Client
	api    s3API // when set, used instead of client by the DoFns
	rng    *rand.Rand

	onFinalize func(*fakeFinalizer)    // when set, receives each successful bundle's callbacks
	ownCadence bool                    // checkpoint where the configuration says, not at random
	plain      bool                    // use the writer that does not finalize bundles
	shared     *finalizingWriteFilesFn // when set, the DoFn instance every bundle runs on (a re-used plan)

	// residuals holds the restrictions of the checkpoints taken, in order.
	residuals []restriction

	checkpointP float64 // chance of a checkpoint at each sync point
	crashP      float64 // chance that a bundle crashes
	finalizeP   float64 // chance that a bundle's callbacks run

	bundles, checkpoints, crashes int

	cm *committer.Committer // shared by the runner's DoFns, as on a worker

	mctx context.Context // carries the Beam metrics of the runner's bundles
}

// context returns the context the runner's bundles run in, with a Beam
// metrics store (see counter).
func (r *runner) context() context.Context {
	if r.mctx == nil {
		r.mctx = metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "simulated"), "WriteFiles")
	}
	return r.mctx
}

// counter is the s3once counter name's value over the runner's bundles.
func (r *runner) counter(name string) int64 {
	var n int64
	err := metrics.Extractor{SumInt64: func(l metrics.Labels, v int64) {
		if l.Namespace() == "s3once" && l.Name() == name {
			n += v
		}
	}}.ExtractFrom(metrics.GetStore(r.context()))
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

// committer returns the committer the runner's DoFns share, over api.
func (r *runner) committer(api s3API) *committer.Committer {
	if r.cm == nil {
		cm, err := committer.New(api, committer.Options{})
		if err != nil {
			r.t.Fatal(err)
		}
		r.cm = cm
	}
	return r.cm
}

func (r *runner) roundTripBatch(b batch) batch {
	return roundTrip(r.t, b, encodeBatch, decodeBatch)
}

func (r *runner) roundTripRestriction(rest restriction) restriction {
	return roundTrip(r.t, rest, encodeRestriction, decodeRestriction)
}

// roundTrip passes v through its real coder, as a runner does with elements
// and residuals.
func roundTrip[T any](t testing.TB, v T, enc func(T) ([]byte, error), dec func([]byte) (T, error)) T {
	t.Helper()
	b, err := enc(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := dec(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run writes b and returns the pending files of the bundles that succeeded.
func (r *runner) run(b batch) []pendingFile {
	rest := r.roundTripRestriction((&writeFilesFn{S: r.s.writerSettings}).CreateInitialRestriction(b))
	if parts := (&writeFilesFn{S: r.s.writerSettings}).SplitRestriction(b, rest); len(parts) != 1 {
		r.t.Fatalf("SplitRestriction gave %d restrictions", len(parts))
	}
	return r.runFrom(b, rest)
}

// runFrom goes on with b from the restriction rest (the initial one, or a
// checkpoint's residual that the runner restores).
func (r *runner) runFrom(b batch, rest restriction) []pendingFile {
	t := r.t
	ctx := r.context()
	var out []pendingFile
	for {
		r.bundles++
		if r.bundles > 10000 {
			t.Fatal("the writer does not make progress")
		}
		elem := r.roundTripBatch(b)
		ffn := &finalizingWriteFilesFn{writeFilesFn: writeFilesFn{S: r.s.writerSettings}}
		if r.shared != nil {
			ffn = r.shared
		}
		fn := &ffn.writeFilesFn
		crash := r.rng.Float64() < r.crashP
		var client s3API = r.client
		if r.api != nil {
			client = r.api
		}
		if crash {
			r.crashes++
			fc := s3fault.New(client)
			var calls atomic.Int64
			limit := int64(r.rng.IntN(12))
			fc.OnAny(func(s3fault.Call) s3fault.Kind {
				if calls.Add(1) > limit {
					return s3fault.BeforeSend
				}
				return s3fault.None
			})
			client = fc
		}
		if !crash {
			fn.committer = r.committer(client)
		}
		if r.shared == nil || fn.writer == nil {
			if err := fn.init(client); err != nil {
				t.Fatal(err)
			}
		}
		seed := r.rng.Uint64()
		ck := rand.New(rand.NewPCG(seed, 3))
		if !r.ownCadence {
			fn.checkpointAt = func(int64) bool { return ck.Float64() < r.checkpointP }
		}

		rt := fn.CreateTracker(rest)
		// The runner asks for splits while the element is processed; they
		// must all be refused.
		stop := make(chan struct{})
		var splitter sync.WaitGroup
		splitter.Add(1)
		go func() {
			defer splitter.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, res, err := rt.TrySplit(0.5); res != nil || err != nil {
					t.Errorf("TrySplit(0.5) = %v, %v; want a refusal", res, err)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		bf := &fakeFinalizer{}
		var emitted []pendingFile
		collect := func(p pendingFile) { emitted = append(emitted, p) }
		var pc sdf.ProcessContinuation
		var err error
		if r.plain {
			pc, err = fn.ProcessElement(ctx, rt, elem, collect)
		} else {
			pc, err = ffn.ProcessElement(ctx, bf, rt, elem, collect)
		}
		close(stop)
		splitter.Wait()
		if crash {
			// Whatever happened, the bundle is lost: redo its restriction.
			continue
		}
		if err != nil {
			t.Fatalf("bundle %d (%v): %v", r.bundles, rest, err)
		}
		out = append(out, emitted...)
		if pc.ShouldResume() {
			r.checkpoints++
			p, res, err := rt.TrySplit(0)
			if err != nil || res == nil {
				t.Fatalf("checkpoint split = %v, %v, %v", p, res, err)
			}
			if !rt.IsDone() {
				t.Fatalf("primary %v is not done after the checkpoint", p)
			}
			r.finalize(bf)
			rest = r.roundTripRestriction(res.(restriction))
			r.residuals = append(r.residuals, rest)
			continue
		}
		if !rt.IsDone() {
			t.Fatalf("the writer stopped before the end of %v", rt.GetRestriction())
		}
		r.finalize(bf)
		return out
	}
}

// finalize hands a successful bundle's callbacks over, or runs them with
// probability finalizeP.
func (r *runner) finalize(bf *fakeFinalizer) {
	if r.onFinalize != nil {
		r.onFinalize(bf)
		return
	}
	if r.rng.Float64() < r.finalizeP {
		bf.run(r.t)
	}
}

// commitAll runs the commit stage over pending, in a shuffled order with
// some files twice (Beam may deliver an element again).
func (r *runner) commitAll(pending []pendingFile) []FileResult {
	t := r.t
	fn := &commitFn{S: r.s.folder}
	var client s3API = r.client
	if r.api != nil {
		client = r.api
	}
	fn.committer = r.committer(client)
	if err := fn.init(client); err != nil {
		t.Fatal(err)
	}
	all := slices.Clone(pending)
	for _, p := range pending {
		if r.rng.IntN(4) == 0 {
			all = append(all, p)
		}
	}
	r.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var res []FileResult
	for _, p := range all {
		if err := fn.ProcessElement(context.Background(), p, func(fr FileResult) { res = append(res, fr) }); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// relative maps the objects under prefix by their key without it.
func relative(t testing.TB, c *s3.Client, bucket, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for k, v := range s3test.Objects(t, c, bucket, prefix+"/") {
		out[strings.TrimPrefix(k, prefix+"/")] = v
	}
	return out
}

func sweep(t testing.TB, c *s3.Client, bucket string) {
	t.Helper()
	cm, err := committer.New(c, committer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Let the server's one-second clock pass everything written.
	time.Sleep(1100 * time.Millisecond)
	if _, err := cm.Sweep(context.Background(), committer.SweepOptions{Bucket: bucket, WholeBucket: true, Cutoff: time.Now(), Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestWriterRetrySimulated checkpoints, resumes and crashes the writer at
// seeded points and checks that the committed files are byte for byte those
// of an uninterrupted run, for each codec.
func TestWriterRetrySimulated(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			bucket := srv.Bucket(t)
			c := testClient()
			b := randomBatch(42, 1500, 60)
			var want []string
			for _, l := range b.Lines {
				want = append(want, strings.TrimSuffix(string(l), "\n"))
			}
			cfg := func(prefix string) settings { return modelSettings(t, bucket, prefix, codec, 12<<10, 512) }

			ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(0, 0))}
			ref.commitAll(ref.run(b))
			refObjs := relative(t, c, bucket, "ref")
			if len(refObjs) < 3 {
				t.Fatalf("the reference run wrote %d files; want several", len(refObjs))
			}
			var got []string
			for k, v := range refObjs {
				got = append(got, lines(t, k, decompress(t, k, v))...)
			}
			sameMultiset(t, got, want)

			for seed := uint64(1); seed <= 5; seed++ {
				prefix := fmt.Sprintf("seed-%d", seed)
				r := &runner{t: t, s: cfg(prefix), client: c, rng: rand.New(rand.NewPCG(seed, 99)),
					checkpointP: 0.3, crashP: 0.15, finalizeP: 0.5}
				pending := r.run(b)
				res := r.commitAll(pending)
				objs := relative(t, c, bucket, prefix)
				if len(objs) != len(refObjs) {
					t.Fatalf("seed %d: %d files, the reference has %d", seed, len(objs), len(refObjs))
				}
				for k, v := range refObjs {
					if !bytes.Equal(objs[k], v) {
						t.Fatalf("seed %d: %s differs from the uninterrupted run (%d bytes vs %d)", seed, k, len(objs[k]), len(v))
					}
				}
				keys := map[string]bool{}
				for _, fr := range res {
					keys[fr.Key] = true
				}
				if len(keys) != len(objs) {
					t.Fatalf("seed %d: results name %d files, %d exist", seed, len(keys), len(objs))
				}
				t.Logf("seed %d: %d bundles, %d checkpoints, %d crashes, %d files", seed, r.bundles, r.checkpoints, r.crashes, len(objs))
			}
			// Crashed attempts leave uploads and side objects for the sweep.
			sweep(t, c, bucket)
			checkClean(t, c, bucket)
		})
	}
}

// bigBatch makes a sorted batch of about size bytes of records.
func bigBatch(seed uint64, size int) batch {
	r := rand.New(rand.NewPCG(seed, 5))
	block := make([]byte, 8192)
	for i := range block {
		block[i] = 'a' + byte(r.IntN(26))
	}
	b := batch{Window: "20240601T000000Z-20240601T010000Z", Pane: 2, Shard: 0, Shards: 1, SubBatches: 1}
	for n, i := 0, 0; n < size; i++ {
		off, ln := r.IntN(len(block)-300), 20+r.IntN(280)
		l := fmt.Appendf(nil, "%09d %s\n", i, block[off:off+ln])
		b.Lines = append(b.Lines, l)
		n += len(l)
	}
	slices.SortFunc(b.Lines, bytes.Compare)
	return b
}

// TestWriterRetrySimulatedParts does the same with files of several 5 MiB
// parts, so that checkpoints fall between parts and tails are large.
func TestWriterRetrySimulatedParts(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	b := bigBatch(7, 13<<20)
	cfg := func(prefix string) settings {
		cf := testConfig(bucket, prefix)
		cf.PartSize = 5 << 20
		cf.Concurrency = 2
		cf.MaxFileBytes = 11 << 20
		cf.CheckpointBytes = 1 << 20
		st, err := cf.settings()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(0, 0))}
	ref.commitAll(ref.run(b))
	refObjs := relative(t, c, bucket, "ref")
	var total int
	for _, v := range refObjs {
		total += len(v)
	}
	if len(refObjs) != 2 || total < 13<<20 {
		t.Fatalf("reference: %d files of %d bytes in all; want 2 files, 13 MiB", len(refObjs), total)
	}
	r := &runner{t: t, s: cfg("retried"), client: c, rng: rand.New(rand.NewPCG(3, 99)),
		checkpointP: 0.5, crashP: 0.25, finalizeP: 0.5}
	r.commitAll(r.run(b))
	objs := relative(t, c, bucket, "retried")
	for k, v := range refObjs {
		if !bytes.Equal(objs[k], v) {
			t.Fatalf("%s differs from the uninterrupted run (%d bytes vs %d)", k, len(objs[k]), len(v))
		}
	}
	if len(objs) != len(refObjs) {
		t.Fatalf("%d files, the reference has %d", len(objs), len(refObjs))
	}
	t.Logf("%d bundles, %d checkpoints, %d crashes", r.bundles, r.checkpoints, r.crashes)
	sweep(t, c, bucket)
	checkClean(t, c, bucket)
}

// TestCommitPaths checks that files are committed once, whichever of the
// bundle-finalization callback and the commit stage gets there first, or
// when both run at once, or when the callbacks never run.
func TestCommitPaths(t *testing.T) {
	for _, mode := range []string{"callbacks-first", "no-callbacks", "concurrent"} {
		t.Run(mode, func(t *testing.T) {
			bucket := srv.Bucket(t)
			c := testClient()
			log := s3fault.New(c)
			cf := testConfig(bucket, "out")
			cf.MaxFileBytes = 4 << 10
			cf.CheckpointBytes = 1 << 10
			st, err := cf.settings()
			if err != nil {
				t.Fatal(err)
			}
			r := &runner{t: t, s: st, client: c, api: log, rng: rand.New(rand.NewPCG(5, 5)), checkpointP: 0.3}
			// Keep the callbacks instead of running them per bundle.
			var cbs []func() error
			r.onFinalize = func(bf *fakeFinalizer) { cbs = append(cbs, bf.cbs...) }
			pending := r.run(randomBatch(9, 600, 40))
			if len(pending) < 4 || len(cbs) != len(pending) {
				t.Fatalf("%d files, %d callbacks", len(pending), len(cbs))
			}
			var res []FileResult
			switch mode {
			case "callbacks-first":
				for _, cb := range cbs {
					if err := cb(); err != nil {
						t.Fatal(err)
					}
				}
				res = r.commitAll(pending)
			case "no-callbacks":
				res = r.commitAll(pending)
			case "concurrent":
				var wg sync.WaitGroup
				for _, cb := range cbs {
					wg.Add(1)
					go func() { defer wg.Done(); _ = cb() }()
				}
				res = r.commitAll(pending)
				wg.Wait()
			}
			// Successful completions by key, and the uploads they completed.
			completed := map[string]int{}
			uploads := map[string]map[string]bool{}
			for _, call := range log.Calls() {
				if call.Op == s3fault.CompleteMultipartUpload && call.Err == nil {
					completed[call.Key]++
					if uploads[call.Key] == nil {
						uploads[call.Key] = map[string]bool{}
					}
					uploads[call.Key][aws.ToString(call.Input.(*s3.CompleteMultipartUploadInput).UploadId)] = true
				}
			}
			objs := s3test.Objects(t, c, bucket, "out/")
			var got []string
			for k, v := range objs {
				// Racing commits may both complete the one upload (S3 answers
				// a repeated completion with 200); otherwise the second one
				// only verifies. Never are two uploads completed for a key.
				if n := completed[k]; n == 0 || (mode != "concurrent" && n != 1) || len(uploads[k]) != 1 {
					t.Errorf("%s completed %d times, from %d uploads", k, n, len(uploads[k]))
				}
				got = append(got, lines(t, k, v)...)
			}
			if len(completed) != len(objs) || len(objs) != len(pending) {
				t.Errorf("%d files pending, %d completed, %d objects", len(pending), len(completed), len(objs))
			}
			var want []string
			for _, l := range randomBatch(9, 600, 40).Lines {
				want = append(want, strings.TrimSuffix(string(l), "\n"))
			}
			sameMultiset(t, got, want)
			keys := map[string]bool{}
			for _, fr := range res {
				keys[fr.Key] = true
			}
			if len(keys) != len(objs) {
				t.Errorf("results name %d files, %d exist", len(keys), len(objs))
			}
			checkClean(t, c, bucket)
		})
	}
}

// TestCheckpointInterval checks the time trigger: with CheckpointBytes larger
// than the file, only CheckpointInterval makes the writer checkpoint, at the
// 1 MiB sync points, and the file is the same as without checkpoints.
func TestCheckpointInterval(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	b := bigBatch(3, 3<<20+1000)
	cfg := func(prefix string, interval time.Duration) settings {
		cf := testConfig(bucket, prefix)
		cf.Compression = "zstd"
		cf.CheckpointBytes = 8 << 20
		cf.CheckpointInterval = interval
		st, err := cf.settings()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// Bytes alone decide the reference's checkpoints (a negative interval):
	// under the default interval a loaded machine could take long enough
	// between sync points to checkpoint by time.
	ref := &runner{t: t, s: cfg("bytes", -1), client: c, rng: rand.New(rand.NewPCG(1, 1)), ownCadence: true}
	ref.commitAll(ref.run(b))
	timed := &runner{t: t, s: cfg("timed", time.Nanosecond), client: c, rng: rand.New(rand.NewPCG(1, 1)), ownCadence: true}
	timed.commitAll(timed.run(b))
	if ref.checkpoints != 0 || timed.checkpoints != 3 {
		t.Fatalf("%d checkpoints by bytes (want 0), %d by time (want 3, one per MiB)", ref.checkpoints, timed.checkpoints)
	}
	a, z := relative(t, c, bucket, "bytes"), relative(t, c, bucket, "timed")
	if len(a) != 1 || len(z) != 1 {
		t.Fatalf("%d and %d files; want one each", len(a), len(z))
	}
	for k, v := range a {
		if !bytes.Equal(z[k], v) {
			t.Fatalf("%s differs between the runs", k)
		}
	}
	checkClean(t, c, bucket)
}

// TestWriterRollback restores older checkpoints after the files their tokens
// name were committed, as a runner that rolls back to its last completed
// checkpoint and replays from there does (Flink): the writer cannot recover
// those files (their uploads are completed and gone), so it writes each one
// again from its first record under a new upload; the commit stage finds the
// file already committed, and the output stays that of an uninterrupted run.
func TestWriterRollback(t *testing.T) {
	for _, codec := range []string{"none", "gzip"} {
		t.Run(codec, func(t *testing.T) {
			bucket := srv.Bucket(t)
			c := testClient()
			b := randomBatch(17, 900, 60)
			cfg := func(prefix string) settings { return modelSettings(t, bucket, prefix, codec, 8<<10, 256) }
			ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(0, 0))}
			ref.commitAll(ref.run(b))
			refObjs := relative(t, c, bucket, "ref")

			r := &runner{t: t, s: cfg("out"), client: c, rng: rand.New(rand.NewPCG(4, 4)),
				checkpointP: 0.5, finalizeP: 0.5}
			r.commitAll(r.run(b))
			checkpoints := slices.Clone(r.residuals)
			restored := 0
			for i, res := range checkpoints {
				if res.Token == nil {
					continue
				}
				restored++
				before := r.counter("files_rewritten")
				r.commitAll(r.runFrom(b, res))
				if n := r.counter("files_rewritten") - before; n != 1 {
					t.Fatalf("restoring checkpoint %d (%v): %d files rewritten; want 1", i, res, n)
				}
				objs := relative(t, c, bucket, "out")
				if len(objs) != len(refObjs) {
					t.Fatalf("after restoring checkpoint %d: %d files, the reference has %d", i, len(objs), len(refObjs))
				}
				for k, v := range refObjs {
					if !bytes.Equal(objs[k], v) {
						t.Fatalf("after restoring checkpoint %d: %s differs from the uninterrupted run", i, k)
					}
				}
			}
			if restored < 3 {
				t.Fatalf("%d checkpoints with an open file restored; want several", restored)
			}
			t.Logf("%d checkpoints restored, %d files, %d records written again", restored, len(refObjs), r.counter("records_rewritten"))
			sweep(t, c, bucket)
			checkClean(t, c, bucket)
		})
	}
}

// TestWriterRewritesLostArtifacts restores a checkpoint whose upload is still
// open but whose tail or upload is gone or altered: the writer writes the
// file again. A transient failure of the same calls is no reason to: the
// bundle fails and the runner retries it.
func TestWriterRewritesLostArtifacts(t *testing.T) {
	for _, tc := range []string{"side object deleted", "side object altered", "upload aborted", "transient"} {
		t.Run(tc, func(t *testing.T) {
			bucket := srv.Bucket(t)
			c := testClient()
			b := randomBatch(23, 300, 60)
			cfg := func(prefix string) settings { return modelSettings(t, bucket, prefix, "", 64<<10, 16) }
			ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(1, 1))}
			ref.commitAll(ref.run(b))
			want := relative(t, c, bucket, "ref")
			if len(want) != 1 {
				t.Fatalf("%d files; want 1", len(want))
			}

			// Take one checkpoint, then stop: the file stays open.
			r := &runner{t: t, s: cfg("out"), client: c, rng: rand.New(rand.NewPCG(2, 2)), checkpointP: 1, plain: true}
			first := r.firstCheckpoint(b)
			rr, err := coder.DecodeResumeToken(first.Token)
			if err != nil {
				t.Fatal(err)
			}
			if rr.Tail.Object == "" {
				t.Fatal("the checkpoint's tail is not in a side object")
			}
			ctx := context.Background()
			switch tc {
			case "side object deleted":
				_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(rr.Tail.Object)})
			case "side object altered":
				_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(rr.Tail.Object),
					Body: bytes.NewReader(bytes.Repeat([]byte("x"), int(rr.Tail.Len)))})
			case "upload aborted":
				_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(rr.Key), UploadId: aws.String(rr.UploadID)})
			case "transient":
				fc := s3fault.New(c)
				fc.On(s3fault.GetObject, s3fault.Always(s3fault.SlowDown))
				fc.On(s3fault.ListParts, s3fault.Always(s3fault.SlowDown))
				r.api = fc
			}
			if err != nil {
				t.Fatal(err)
			}
			r.checkpointP = 0
			if tc == "transient" {
				err := r.tryFrom(b, first)
				if err == nil || mustRewrite(err) {
					t.Fatalf("a transient failure: %v; want the bundle to fail without a rewrite", err)
				}
				if n := r.counter("files_rewritten"); n != 0 {
					t.Fatalf("%d files rewritten after a transient failure", n)
				}
				r.api = nil // the runner retries the bundle once S3 answers again
			}
			r.commitAll(r.runFrom(b, first))
			wantRewrites := int64(1)
			if tc == "transient" {
				wantRewrites = 0
			}
			if n := r.counter("files_rewritten"); n != wantRewrites {
				t.Fatalf("%d files rewritten; want %d", n, wantRewrites)
			}
			got := relative(t, c, bucket, "out")
			for k, v := range want {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("%s differs from the uninterrupted run", k)
				}
			}
			sweep(t, c, bucket)
			checkClean(t, c, bucket)
		})
	}
}

// firstCheckpoint runs b until the writer's first checkpoint and returns its
// residual; the bundle's outputs are dropped.
func (r *runner) firstCheckpoint(b batch) restriction {
	r.t.Helper()
	fn := &writeFilesFn{S: r.s.writerSettings}
	if err := fn.init(r.client); err != nil {
		r.t.Fatal(err)
	}
	fn.checkpointAt = func(int64) bool { return true }
	rt := fn.CreateTracker(fn.CreateInitialRestriction(b))
	pc, err := fn.ProcessElement(r.context(), rt, b, func(pendingFile) {})
	if err != nil || !pc.ShouldResume() {
		r.t.Fatalf("first bundle: %v, resume %v", err, pc.ShouldResume())
	}
	_, res, err := rt.TrySplit(0)
	if err != nil || res == nil {
		r.t.Fatalf("checkpoint split: %v, %v", res, err)
	}
	return r.roundTripRestriction(res.(restriction))
}

// tryFrom runs one bundle of b from rest over r.api and returns its error.
func (r *runner) tryFrom(b batch, rest restriction) error {
	fn := &writeFilesFn{S: r.s.writerSettings}
	fn.committer = r.committer(r.client)
	if err := fn.init(r.api); err != nil {
		r.t.Fatal(err)
	}
	_, err := fn.ProcessElement(r.context(), fn.CreateTracker(rest), b, func(pendingFile) {})
	return err
}

// TestMustRewrite checks which recovery failures make the writer write a
// file again.
func TestMustRewrite(t *testing.T) {
	for _, err := range []error{recoverable.ErrNoSuchUpload, recoverable.ErrSideObjectMissing, recoverable.ErrTailCorrupt, recoverable.ErrPartsChanged} {
		if wrapped := fmt.Errorf("s3once sink: recover: %w", err); !mustRewrite(wrapped) {
			t.Errorf("mustRewrite(%v) = false", wrapped)
		}
	}
	for _, err := range []error{nil, recoverable.ErrCallTimeout, recoverable.ErrInvalidToken, recoverable.ErrForeignStaging, context.DeadlineExceeded, context.Canceled, s3fault.FaultError(s3fault.ListParts, s3fault.SlowDown)} {
		if mustRewrite(err) {
			t.Errorf("mustRewrite(%v) = true", err)
		}
	}
}

// modelSettings is the simulated runner tests' configuration: files of
// maxFile bytes compressed with codec ("" for none), a checkpoint every KiB,
// and tails up to inlineTail bytes in the token, larger ones in side objects.
func modelSettings(t *testing.T, bucket, prefix, codec string, maxFile int64, inlineTail int) settings {
	t.Helper()
	cf := testConfig(bucket, prefix)
	cf.Compression = codec
	cf.MaxFileBytes = maxFile
	cf.CheckpointBytes = 1 << 10
	cf.InlineTailMax = inlineTail
	st, err := cf.settings()
	if err != nil {
		t.Fatal(err)
	}
	return st
}
