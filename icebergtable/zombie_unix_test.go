//go:build unix

package icebergtable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
)

// A zombie: a run paused with SIGSTOP at a random moment, the same run
// rerun to the end meanwhile, then the zombie resumed and left to finish.
// Whatever the zombie was doing (writing files, committing them, staging
// or committing the table's snapshot), the table holds the run once.
func TestZombieWriter(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	const records = 3000
	child := func(bucket, db string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildPipeline$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", childEndpoint+"="+endpoint, childBucket+"="+bucket, childCatalog+"="+db, childRecords+"="+strconv.Itoa(records))
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &buf
	}
	began := time.Now()
	ref, refOut := child(srv.Bucket(t), t.TempDir()+"/ref.db")
	if err := ref.Wait(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, refOut.Bytes())
	}
	span := time.Since(began)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for i := range 3 {
		bucket, db := srv.Bucket(t), fmt.Sprintf("%s/zombie-%d.db", t.TempDir(), i)
		zombie, zout := child(bucket, db)
		pause := time.Duration(rng.Int64N(int64(span))) + time.Millisecond
		time.Sleep(pause)
		if err := zombie.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		rerun, rout := child(bucket, db)
		rerr := rerun.Wait()
		// The one wait a paused zombie may cause (documented, see
		// sqliteDefaults): paused inside its commit's few milliseconds
		// of SQLite write lock, it blocks every other writer, which
		// fails with SQLITE_BUSY; then the zombie resumes and the
		// rerun is run again.
		lockedOut := rerr != nil && bytes.Contains(rout.Bytes(), []byte("SQLITE_BUSY"))
		if rerr != nil && !lockedOut {
			_ = zombie.Process.Signal(syscall.SIGCONT)
			_ = zombie.Wait()
			t.Fatalf("the rerun beside a paused zombie: %v\n%s", rerr, rout.Bytes())
		}
		if err := zombie.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		zerr := zombie.Wait() // it may fail (its checkpoint's uploads committed by the rerun) or succeed
		if lockedOut {
			again, aout := child(bucket, db)
			if err := again.Wait(); err != nil {
				t.Fatalf("the rerun after the zombie that held the catalog's write lock resumed: %v\n%s", err, aout.Bytes())
			}
			t.Logf("zombie %d: paused inside the catalog's write lock; the rerun beside it failed with SQLITE_BUSY, the one after it succeeded", i)
		}
		cat, err := catalog.Load(context.Background(), "crash", iceberg.Properties(crashCatalogProps(bucket, db)))
		if err != nil {
			t.Fatal(err)
		}
		if snaps := snapshots(t, cat); len(snaps) != 1 {
			t.Fatalf("zombie %d (paused after %v, then %v): %d snapshots, want 1\n%s", i, pause, zerr, len(snaps), zout.Bytes())
		}
		wantIDs(t, cat, [2]int{0, records})
		t.Logf("zombie %d: paused after %v; after the rerun it ended with %v", i, pause.Round(time.Millisecond), zerr)
	}
}
