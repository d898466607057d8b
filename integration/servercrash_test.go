package integration

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// The S3 server is SIGKILLed in the middle of a run: while it completes an
// upload (a commit), while it stores a part or a side object, or at a random
// moment. It is restarted (after s3test's repair of what versitygw strands
// when it dies inside a completion), either soon, while the pipeline still
// retries, or only once the run has failed. Whatever that run did, it left
// no wrong object; a rerun then gives exactly the uninterrupted output.
func TestServerCrash(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	tp := newTap(t, srv.Endpoint())
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	cfg := crashConfigs[0]
	var refs references
	ref := refs.get(t, bin, env, srv, tp, client, cfg)
	rng := rand.New(rand.NewPCG(crashSeed(), 0x5e1f))

	cases := []struct {
		name    string
		ev      event // the call during which the server dies
		restart bool  // restart while the run goes on (else after it ends)
	}{
		{"inside a commit, restarted at once", evComplete, true},
		{"during a part upload, restarted at once", evPart, true},
		{"during a persist, restarted at once", evPersist, true},
		{"at a random moment, down until the run fails", evAny, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bucket := srv.Bucket(t)
			killed := make(chan struct{})
			killServer := func() {
				srv.Kill()
				close(killed)
			}
			// A random moment is a random call of the run, between a fifth
			// and nine tenths of the way through the reference's calls: a
			// point in the run's progress, which a run faster or slower than
			// the reference reaches all the same (a timer may fire after a
			// fast run has ended).
			n := 1 + rng.IntN(ref.most(tc.ev))
			if tc.ev == evAny {
				total := ref.most(evAny)
				n = total/5 + rng.IntN(max(total*9/10-total/5, 1))
			}
			tr := &trigger{ev: tc.ev, n: n, phase: duringServer,
				delay: time.Duration(rng.IntN(3000)) * time.Microsecond, action: killServer}
			plan := tr.String()
			tp.arm(tr)
			var extra []string
			if tc.restart {
				// Enough SDK retries to outlast a short outage.
				extra = []string{"--s3-max-attempts", "10"}
			}
			c := runBatch(t, bin, env, tp.URL(), bucket, cfg, extra...)
			restarted := false
			if tc.restart {
				select {
				case <-killed:
					time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
					if err := srv.Restart(); err != nil {
						t.Fatalf("restart: %v", err)
					}
					restarted = true
				case <-c.done:
				}
			}
			o := c.wait(4 * time.Minute)
			tp.arm(nil)
			select {
			case <-killed:
			default:
				t.Fatalf("the server was never killed (%s); the run: %v", plan, o)
			}
			if !restarted {
				if err := srv.Restart(); err != nil {
					t.Fatalf("restart: %v", err)
				}
			}
			if o.TimedOut {
				t.Fatalf("the run hung after the server died (%s)\nstderr:\n%s", plan, o.Stderr)
			}
			got := s3test.Objects(t, client, bucket, outPrefix+"/")
			if o.Code == 0 {
				sameObjects(t, got, ref.objects)
			} else {
				noWrongObject(t, got, ref.objects)
				if o.Stderr == "" {
					t.Errorf("the run failed (%v) without a message", o)
				}
			}
			t.Logf("server killed %s: the run %v with %d of %d objects; its last words: %s", plan, o, len(got), len(ref.objects), lastLine(o.Stderr))

			final := runBatch(t, bin, env, tp.URL(), bucket, cfg).wait(4 * time.Minute)
			if final.Code != 0 {
				t.Fatalf("rerun after the restart: %v\nstderr:\n%s", final, final.Stderr)
			}
			sameObjects(t, s3test.Objects(t, client, bucket, outPrefix+"/"), ref.objects)
			rep := sweepAndCheckClean(t, client, bucket, outPrefix+"/")
			t.Logf("rerun %v; sweep removed %d uploads and %d side objects", final, rep.Uploads.Removed, rep.SideObjects.Removed)
		})
	}
}
