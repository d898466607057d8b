package committer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// The server is SIGKILLed while CompleteMultipartUpload is in flight, then
// restarted with its repair step. Whatever the kill left (the object, the
// upload, or both), CommitAfterRecovery must end with the verified object.
func TestServerKilledDuringComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	outcomes := map[string]int{}
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			e := newEnv(t)
			data := payload(seed, 26<<20) // six parts
			k := key("killed", int(seed))
			cr := e.write(k, data, 0)

			f := s3fault.New(e.client)
			started := make(chan struct{})
			var once sync.Once
			f.On(s3fault.CompleteMultipartUpload, func(s3fault.Call) s3fault.Kind {
				once.Do(func() { close(started) })
				return s3fault.None
			})
			c := newCommitter(t, f, committer.Options{MaxAttempts: 2, MaxRounds: 2})
			done := make(chan error, 1)
			go func() {
				_, err := c.Commit(context.Background(), cr)
				done <- err
			}()
			r := rand.New(rand.NewPCG(seed, 7))
			select {
			case <-started:
			case err := <-done:
				t.Fatalf("commit ended before completing: %v", err)
			}
			time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
			e.srv.Kill()
			firstErr := <-done
			if err := e.srv.Restart(); err != nil {
				t.Fatal(err)
			}
			before := fmt.Sprintf("commit err=%v object=%v upload=%v", firstErr != nil, e.get(k) != nil, e.uploadExists(cr))
			t.Log(before)

			c2 := newCommitter(t, e.srv.Client(e.clientOpts()), committer.Options{})
			res, err := c2.CommitAfterRecovery(context.Background(), cr)
			if err != nil {
				t.Fatalf("after restart (%s): %v", before, err)
			}
			checkResult(t, res, cr)
			e.mustHold(k, data)
			if e.uploadExists(cr) {
				t.Fatal("upload still open after the commit")
			}
			outcomes[before]++
		})
	}
	t.Logf("states after the kill: %v", outcomes)
}
