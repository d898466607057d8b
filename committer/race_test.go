package committer_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/recoverable"
)

// raceCommits commits every token at once, each from its own goroutine and
// Committer (separate workers), and returns their outcomes.
func raceCommits(t *testing.T, e *env, crs []recoverable.CommitToken, after bool) ([]committer.Result, []error) {
	t.Helper()
	res := make([]committer.Result, len(crs))
	errs := make([]error, len(crs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, cr := range crs {
		c := newCommitter(t, e.client, committer.Options{SkipPreflight: true})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if after {
				res[i], errs[i] = c.CommitAfterRecovery(context.Background(), cr)
			} else {
				res[i], errs[i] = c.Commit(context.Background(), cr)
			}
		}()
	}
	close(start)
	wg.Wait()
	return res, errs
}

func TestRaceDifferentBytesOneWinner(t *testing.T) {
	e := newEnv(t)
	const n = 6
	for round, after := range []bool{false, true, false} {
		k := key("race-diff", round)
		var crs []recoverable.CommitToken
		var datas [][]byte
		for i := 0; i < n; i++ {
			d := payload(uint64(100*round+i), 4000)
			datas = append(datas, d)
			crs = append(crs, e.write(k, d, 1))
		}
		res, errs := raceCommits(t, e, crs, after)
		winner := -1
		for i := range crs {
			switch {
			case errs[i] == nil && res[i].Created:
				if winner >= 0 {
					t.Fatalf("round %d: two winners, %d and %d", round, winner, i)
				}
				winner = i
			case errors.Is(errs[i], committer.ErrKeyTaken):
				mustBeTyped(t, errs[i], crs[i])
			default:
				t.Fatalf("round %d: committer %d: %+v %v", round, i, res[i], errs[i])
			}
			if e.uploadExists(crs[i]) {
				t.Fatalf("round %d: upload %d still open", round, i)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no winner: %v", round, errs)
		}
		e.mustHold(k, datas[winner])
	}
}

func TestRaceSameBytesOneCreatorOthersCommitted(t *testing.T) {
	e := newEnv(t)
	const n = 6
	for round, after := range []bool{false, true} {
		k := key("race-same", round)
		data := payload(uint64(200+round), 4000)
		var crs []recoverable.CommitToken
		for i := 0; i < n; i++ {
			crs = append(crs, e.write(k, data, 1))
		}
		res, errs := raceCommits(t, e, crs, after)
		created := 0
		for i := range crs {
			if errs[i] != nil {
				t.Fatalf("round %d: committer %d: %v", round, i, errs[i])
			}
			checkResult(t, res[i], crs[i])
			if res[i].Created {
				created++
			} else if !res[i].UploadAborted {
				t.Fatalf("round %d: loser %d did not abort its upload: %+v", round, i, res[i])
			}
			if e.uploadExists(crs[i]) {
				t.Fatalf("round %d: upload %d still open", round, i)
			}
		}
		if created != 1 {
			t.Fatalf("round %d: %d creators, want 1", round, created)
		}
		e.mustHold(k, data)
	}
}

// The fast path and the commit stage commit the same token at once.
func TestRaceSameUpload(t *testing.T) {
	e := newEnv(t)
	data := payload(300, 6<<20)
	cr := e.write("out/same-upload", data, 2)
	crs := []recoverable.CommitToken{cr, cr, cr, cr}
	res, errs := raceCommits(t, e, crs, false)
	created := 0
	for i := range crs {
		if errs[i] != nil {
			t.Fatalf("committer %d: %v", i, errs[i])
		}
		checkResult(t, res[i], cr)
		if res[i].Created {
			created++
		}
	}
	if created == 0 {
		t.Fatal("nobody created the object")
	}
	e.mustHold("out/same-upload", data)
}
