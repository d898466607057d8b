package integration

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/s3once/s3once/integration/internal/pattern"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// A writer that keeps its resume tokens in a durable file, as a runner keeps
// checkpoints, is SIGKILLed at random moments, at random checkpoints and
// between its close and its commit, and started again each time from the
// last token; the object it finally commits holds exactly the bytes it was
// meant to. This is what the embedded runner cannot show: recovery from a
// token across a process death, the tail included.
func TestTokenRecoveryAcrossProcessDeath(t *testing.T) {
	t.Parallel()
	tokenRecovery(t, s3test.Options{}, max(envInt("S3ONCE_CRASH_LOOPS", 5)/2, 3))
}

// tokenRecovery runs the test above against the server opts start, for
// seeds files.
func tokenRecovery(t *testing.T, opts s3test.Options, seeds int) {
	base := crashSeed()
	bin := binary(t, "integration/internal/streamwriter")
	srv := s3test.Start(t, opts)
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)

	var recoveries, crashes, crashesAfterClose int
	for i := range seeds {
		seed := base + uint64(i)
		rng := rand.New(rand.NewPCG(seed, 0x70c3))
		bucket := srv.Bucket(t)
		// A name of the sink's pattern: the sweep aborts an upload that no
		// token names (a writer killed between opening the upload and its
		// first checkpoint) only under s3once's own file names.
		key := fmt.Sprintf("tokens/global-pane-0-shard-00000-of-00001-file-%05d.txt", seed)
		state := t.TempDir()
		size := 12<<20 + rng.IntN(12<<20)
		// Odd seeds keep small tails inside the token; even seeds always
		// use side objects.
		inline := "-1"
		if seed%2 == 1 {
			inline = "65536"
		}
		args := []string{"-endpoint", srv.Endpoint(), "-bucket", bucket, "-key", key, "-state", state,
			"-size", fmt.Sprint(size), "-seed", fmt.Sprint(seed), "-persist-every", fmt.Sprint(256<<10 + rng.IntN(1<<20)),
			"-inline-tail-max", inline, "-pace", "20ms"}

		var story []string
		done := false
		for attempt := 0; attempt < 40 && !done; attempt++ {
			k := newKiller()
			// Kill at a random checkpoint line, between close and commit, or
			// on a timer; the last attempts run to the end.
			var atLine atomic.Int32
			// The first attempts die before the close, so that the file
			// is resumed from a token a few times.
			mode := rng.IntN(4)
			switch {
			case attempt < 3 && mode == 1:
				mode = 0
			case attempt >= 25:
				mode = -1
			}
			target := int32(1 + rng.IntN(6))
			// The callback runs on the goroutine that copies the child's
			// output, which the child's Wait waits for: kill without waiting.
			lines := func(l string) {
				switch {
				case mode == 0 && strings.HasPrefix(l, "checkpoint") && atLine.Add(1) == target:
					go k.kill()
				case mode == 1 && strings.HasPrefix(l, "closed"):
					go k.kill()
				}
			}
			c := startChild(t, bin, env, lines, args...)
			k.set(c)
			var timer *time.Timer
			if mode >= 2 {
				timer = time.AfterFunc(time.Duration(50+rng.IntN(1500))*time.Millisecond, k.kill)
			}
			o := c.wait(2 * time.Minute)
			if timer != nil {
				timer.Stop()
			}
			recoveries += strings.Count(o.Stdout, "recovered ")
			switch {
			case o.TimedOut:
				t.Fatalf("seed %d attempt %d hung\nstdout:\n%s\nstderr:\n%s", seed, attempt, o.Stdout, o.Stderr)
			case o.Killed:
				crashes++
				if mode == 1 {
					crashesAfterClose++
				}
				story = append(story, fmt.Sprintf("killed after %v at %q", o.Elapsed.Round(time.Millisecond), lastLine(o.Stdout)))
			case o.Code == 0:
				done = true
				story = append(story, "finished: "+lastLine(o.Stdout))
			default:
				t.Fatalf("seed %d attempt %d failed: %v\nstdout:\n%s\nstderr:\n%s", seed, attempt, o, o.Stdout, o.Stderr)
			}
		}
		if !done {
			t.Fatalf("seed %d: never finished: %s", seed, strings.Join(story, "; "))
		}
		got := s3test.Object(t, client, bucket, key)
		want := pattern.Bytes(seed, size)
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: object holds %d bytes, want %d, first difference at byte %d", seed, len(got), len(want), firstDiff(got, want))
		}
		rep := sweepAndCheckClean(t, client, bucket, "tokens/")
		if !bytes.Equal(s3test.Object(t, client, bucket, key), want) {
			t.Fatalf("seed %d: the sweep changed the object", seed)
		}
		t.Logf("seed %d (%d bytes, inline tails up to %s): %s; sweep removed %d uploads, %d side objects",
			seed, size, inline, strings.Join(story, "; "), rep.Uploads.Removed, rep.SideObjects.Removed)
	}
	t.Logf("%d seeds: %d real crashes (%d between close and commit), %d recoveries from a token", seeds, crashes, crashesAfterClose, recoveries)
	if crashes == 0 || recoveries == 0 {
		t.Errorf("the test proved nothing: %d crashes, %d recoveries", crashes, recoveries)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
