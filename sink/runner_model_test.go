package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/s3once/s3once/committer"
)

// The runner model: what a runner may do to the writer's bundles beyond
// checkpoints, crashes and restores (sdf_test.go), with the real DoFns over
// the real server.
//
//   - Zombies: a bundle is processed twice, from the same restriction, by
//     two DoFn instances with the same checkpoint decisions: at the same
//     time (either attempt's output is the one kept), or later, alongside
//     the bundles after it (its output is dropped). The dropped attempt
//     goes on writing to the upload its token names, or to a new one when
//     it finds the file committed.
//   - Finalization callbacks of a kept bundle run at once, are dropped, or
//     are delayed until after a later bundle; those still delayed at the
//     end (the last bundle's always) run while the commit stage commits the
//     same files.

// zombieModel says how often the runner does each of those things.
type zombieModel struct {
	zombieP     float64 // chance that a bundle is processed twice
	concurrentP float64 // of those, chance the two run at the same time
	dropP       float64 // chance that a kept bundle's callbacks are dropped
	delayP      float64 // chance that they are delayed
}

// modelLog is what the runner model did, and what its dropped attempts and
// callbacks reported.
type modelLog struct {
	mu                             sync.Mutex
	concurrent, later              int // zombies by kind
	ran, dropped, delayed          int // callbacks by fate (delayed ones also ran)
	zombieErrs, callbackErrs       []error
	zombieFiles, zombieCheckpoints int
}

func (l *modelLog) zombie(o bundleRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o.err != nil {
		l.zombieErrs = append(l.zombieErrs, o.err)
	}
	l.zombieFiles += len(o.emitted)
	if o.residual != nil {
		l.zombieCheckpoints++
	}
}

func (l *modelLog) callback(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.callbackErrs = append(l.callbackErrs, err)
}

// bundleRun is one attempt at a bundle: its outputs, its callbacks, the
// residual of its checkpoint, and its error.
type bundleRun struct {
	emitted  []pendingFile
	bf       *fakeFinalizer
	residual *restriction
	err      error
}

// attempt processes elem from rest on a fresh finalizing DoFn, checkpointing
// where a generator seeded with seed says (two attempts with one seed stop
// at the same records). It may run on any goroutine: it reports failures
// instead of failing the test.
func (r *runner) attempt(ctx context.Context, elem batch, rest restriction, seed uint64) bundleRun {
	ffn := &finalizingWriteFilesFn{writeFilesFn: writeFilesFn{S: r.s.writerSettings}}
	fn := &ffn.writeFilesFn
	fn.committer = r.cm
	if err := fn.init(r.client); err != nil {
		return bundleRun{err: err}
	}
	ck := rand.New(rand.NewPCG(seed, 3))
	fn.checkpointAt = func(int64) bool { return ck.Float64() < r.checkpointP }
	rt := fn.CreateTracker(rest)
	out := bundleRun{bf: &fakeFinalizer{}}
	var pc sdf.ProcessContinuation
	pc, out.err = ffn.ProcessElement(ctx, out.bf, rt, elem, func(p pendingFile) { out.emitted = append(out.emitted, p) })
	if out.err != nil || !pc.ShouldResume() {
		if out.err == nil && !rt.IsDone() {
			out.err = fmt.Errorf("the writer stopped before the end of %v", rt.GetRestriction())
		}
		return out
	}
	_, res, err := rt.TrySplit(0)
	if err != nil || res == nil {
		out.err = fmt.Errorf("checkpoint split: %v, %w", res, err)
		return out
	}
	enc, err := encodeRestriction(res.(restriction))
	if err == nil {
		var rr restriction
		if rr, err = decodeRestriction(enc); err == nil {
			out.residual = &rr
		}
	}
	if err != nil {
		out.err = fmt.Errorf("residual coder: %w", err)
	}
	return out
}

// runModel writes b under the model m and returns the pending files of the
// kept bundles; the callbacks still delayed at the end are in delayed.
// Zombies still running are tracked by zombies: wait for it before
// checking the bucket.
func (r *runner) runModel(b batch, m zombieModel, log *modelLog, zombies *sync.WaitGroup) (pending []pendingFile, delayed []func() error) {
	t := r.t
	r.committer(r.client) // made here, shared by every attempt
	rest := r.roundTripRestriction((&writeFilesFn{S: r.s.writerSettings}).CreateInitialRestriction(b))
	for {
		r.bundles++
		if r.bundles > 10000 {
			t.Fatal("the writer does not make progress")
		}
		seed := r.rng.Uint64()
		dup := r.rng.Float64() < m.zombieP
		concurrent := dup && r.rng.Float64() < m.concurrentP
		elem, twin := r.roundTripBatch(b), r.roundTripBatch(b)
		ctx := r.context()
		var out bundleRun
		switch {
		case concurrent:
			log.concurrent++
			var both [2]bundleRun
			var wg sync.WaitGroup
			wg.Go(func() { both[0] = r.attempt(ctx, elem, rest, seed) })
			wg.Go(func() { both[1] = r.attempt(zombieContext(r.bundles), twin, rest, seed) })
			wg.Wait()
			keep := r.rng.IntN(2)
			out = both[keep]
			log.zombie(both[1-keep])
		case dup:
			log.later++
			out = r.attempt(ctx, elem, rest, seed)
			// The duplicate runs after this bundle, alongside the next ones.
			from, n := rest, r.bundles
			zombies.Go(func() { log.zombie(r.attempt(zombieContext(n), twin, from, seed)) })
		default:
			out = r.attempt(ctx, elem, rest, seed)
		}
		if out.err != nil {
			t.Fatalf("bundle %d (%v): %v", r.bundles, rest, out.err)
		}
		pending = append(pending, out.emitted...)

		// Callbacks delayed by earlier bundles may run now, after this one.
		var keep []func() error
		for _, cb := range delayed {
			if r.rng.IntN(2) == 0 {
				log.callback(cb())
			} else {
				keep = append(keep, cb)
			}
		}
		delayed = keep
		switch f := r.rng.Float64(); {
		case out.residual == nil:
			// The last bundle's callbacks race the commit stage.
			log.delayed += len(out.bf.cbs)
			delayed = append(delayed, out.bf.cbs...)
		case f < m.dropP:
			log.dropped += len(out.bf.cbs)
		case f < m.dropP+m.delayP:
			log.delayed += len(out.bf.cbs)
			delayed = append(delayed, out.bf.cbs...)
		default:
			log.ran += len(out.bf.cbs)
			for _, cb := range out.bf.cbs {
				log.callback(cb())
			}
		}
		if out.residual == nil {
			return pending, delayed
		}
		r.checkpoints++
		rest = *out.residual
		r.residuals = append(r.residuals, rest)
	}
}

// zombieContext is the context of a duplicate attempt, with a metrics store
// of its own (its counters are not the kept bundles').
func zombieContext(bundle int) context.Context {
	return metrics.SetPTransformID(metrics.SetBundleID(context.Background(), fmt.Sprintf("zombie-%d", bundle)), "WriteFiles")
}

// TestRunnerModel runs the writer under zombies and dropped or delayed
// finalization callbacks, ends with the commit stage racing the callbacks
// still delayed, and checks that the committed files are byte for byte
// those of an uninterrupted run, none missing or extra, every commit and
// callback succeeded, nothing claimed data lost, and a sweep leaves
// nothing behind.
func TestRunnerModel(t *testing.T) {
	for _, codec := range []string{"none", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			bucket := srv.Bucket(t)
			c := testClient()
			b := randomBatch(31, 1200, 60)
			cfg := func(prefix string) settings { return modelSettings(t, bucket, prefix, codec, 12<<10, 512) }
			ref := &runner{t: t, s: cfg("ref"), client: c, rng: rand.New(rand.NewPCG(0, 0))}
			ref.commitAll(ref.run(b))
			want := relative(t, c, bucket, "ref")
			if len(want) < 3 {
				t.Fatalf("the reference run wrote %d files; want several", len(want))
			}
			m := zombieModel{zombieP: 0.4, concurrentP: 0.5, dropP: 0.3, delayP: 0.4}
			var total modelLog
			for seed := uint64(1); seed <= 3; seed++ {
				prefix := fmt.Sprintf("seed-%d", seed)
				r := &runner{t: t, s: cfg(prefix), client: c, rng: rand.New(rand.NewPCG(seed, 11)), checkpointP: 0.3}
				log := &modelLog{}
				var zombies sync.WaitGroup
				pending, delayed := r.runModel(b, m, log, &zombies)
				// The commit stage and the callbacks still delayed commit
				// the same files at once.
				var cbs sync.WaitGroup
				for _, cb := range delayed {
					cbs.Go(func() { log.callback(cb()) })
				}
				res := r.commitAll(pending)
				cbs.Wait()
				zombies.Wait()

				got := relative(t, c, bucket, prefix)
				if len(got) != len(want) {
					t.Errorf("seed %d: %d files, the uninterrupted run has %d", seed, len(got), len(want))
				}
				for k, v := range want {
					if !bytes.Equal(got[k], v) {
						t.Errorf("seed %d: %s differs from the uninterrupted run (%d bytes vs %d)", seed, k, len(got[k]), len(v))
					}
				}
				keys := map[string]bool{}
				for _, fr := range res {
					keys[strings.TrimPrefix(fr.Key, prefix+"/")] = true
				}
				if len(keys) != len(want) {
					t.Errorf("seed %d: the commit stage names %d files, want %d", seed, len(keys), len(want))
				}
				for _, err := range log.callbackErrs {
					t.Errorf("seed %d: a finalization callback failed: %v", seed, err)
				}
				for _, err := range log.zombieErrs {
					if errors.Is(err, committer.ErrDataLost) {
						t.Errorf("seed %d: a duplicate attempt claimed data lost: %v", seed, err)
					}
					// Expected: a duplicate that finds its upload committed
					// under it fails, and its output is dropped anyway.
					t.Logf("seed %d: a dropped duplicate failed: %v", seed, err)
				}
				if len(delayed) == 0 {
					t.Errorf("seed %d: no callback raced the commit stage", seed)
				}
				t.Logf("seed %d: %d bundles, %d checkpoints; zombies: %d at once, %d later (%d failed, %d files and %d checkpoints of theirs dropped); callbacks: %d ran, %d dropped, %d delayed (%d still at the commit stage)",
					seed, r.bundles, r.checkpoints, log.concurrent, log.later, len(log.zombieErrs), log.zombieFiles, log.zombieCheckpoints, log.ran, log.dropped, log.delayed, len(delayed))
				total.concurrent += log.concurrent
				total.later += log.later
				total.ran += log.ran
				total.dropped += log.dropped
				total.delayed += log.delayed
			}
			if total.concurrent == 0 || total.later == 0 || total.ran == 0 || total.dropped == 0 || total.delayed == 0 {
				t.Fatalf("the model missed a case: zombies %d at once, %d later; callbacks %d ran, %d dropped, %d delayed",
					total.concurrent, total.later, total.ran, total.dropped, total.delayed)
			}
			// Dropped attempts leave uploads and side objects for the sweep.
			sweep(t, c, bucket)
			checkClean(t, c, bucket)
		})
	}
}
