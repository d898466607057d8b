//go:build unix

package icebergtable

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The maintenance crash loop's child runs Compact, ExpireSnapshots and
// RemoveOrphans, one after another, in a process of its own and kills
// itself (SIGKILL) at the step the parent names.
const (
	maintainKillEnv   = "S3ONCE_ICEBERG_MAINTAIN_KILL"   // the step: see maintainKills
	maintainCutoffEnv = "S3ONCE_ICEBERG_MAINTAIN_CUTOFF" // orphan removal's cutoff, Unix nanoseconds
	maintainLoopsEnv  = "S3ONCE_ICEBERG_MAINTAIN_LOOPS"  // loops of the crash test (default 3)
	maintainSeedEnv   = "S3ONCE_ICEBERG_MAINTAIN_SEED"   // the first loop's kill step (default 0)
)

// maintainKills are the steps a child is killed at, in the order the
// loops take them from the seed on, so that make test's three loops kill
// each of the three operations once: after the compaction's first file;
// right after the catalog applied the expiry (the answer never read);
// after orphan removal's first delete; right after the catalog applied
// the compaction; once the expired runs' markers are written; between
// orphan removal's listing and its load; before the compaction's plan;
// once the plan holds; after the compaction's second file.
var maintainKills = []string{"written-1", "applied-2", "orphans-deleted-1", "applied-1", "expire-marked", "orphans-listed", "plan", "planned", "written-2"}

// killAfterCommit is a catalog that kills the process right after the
// at-th commit the inner catalog applied (counting from 1).
type killAfterCommit struct {
	catalog.Catalog
	at      int
	applied *int
}

func (c killAfterCommit) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c killAfterCommit) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	md, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err == nil {
		if *c.applied++; *c.applied == c.at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	return md, loc, err
}

// TestMaintenanceChild is TestMaintenanceCrashLoop's child; it does
// nothing in an ordinary run.
func TestMaintenanceChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" || os.Getenv(maintainKillEnv) == "" {
		t.Skip("the maintenance crash loop's child (TestMaintenanceCrashLoop starts it)")
	}
	ctx := context.Background()
	kill := os.Getenv(maintainKillEnv)
	cutoff, err := strconv.ParseInt(os.Getenv(maintainCutoffEnv), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", maintainCutoffEnv, err)
	}
	cat, err := catalog.Load(ctx, "crash", iceberg.Properties(crashCatalogProps(os.Getenv(childBucket), os.Getenv(childCatalog))))
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := strings.CutPrefix(kill, "applied-"); ok {
		n, err := strconv.Atoi(at)
		if err != nil {
			t.Fatal(err)
		}
		cat = killAfterCommit{Catalog: cat, at: n, applied: new(int)}
	}
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "", byDay...)
	if err != nil {
		t.Fatal(err)
	}
	tbl.onStep = func(step string, n int) {
		if kill == step || kill == fmt.Sprintf("%s-%d", step, n) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	rep, err := tbl.Compact(ctx, Compaction{ID: "crash-compaction"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("compaction report: %+v\n", rep)
	exp, err := tbl.ExpireSnapshots(ctx, Expiry{RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("expiry report: %d expired, %d kept, %d markers written, %d rounds\n", len(exp.Expired), exp.Kept, exp.MarkersWritten, exp.Rounds)
	// The safety age measured from the parent's cutoff: every file the
	// appender stages is younger, every file of the table's first run and
	// of the expired snapshots before it older.
	orph, err := tbl.RemoveOrphans(ctx, Orphans{OlderThan: MinOrphanAge, Now: time.Unix(0, cutoff).Add(MinOrphanAge), AbandonRuns: []string{"base"}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("orphan report: %d deleted (%d bytes), %d listed, %d referenced, %d young, %d in run folders\n", len(orph.Deleted), orph.DeletedBytes, orph.Listed, orph.Referenced, orph.KeptYoung, orph.KeptRunFolder)
}

// TestMaintenanceCrashLoop: a child process runs the maintenance of a
// streaming table (Compact, then ExpireSnapshots keeping one snapshot,
// then RemoveOrphans with the first run abandoned) and is killed with
// SIGKILL at a seeded step (maintainKills) while the parent's appender
// commits windows beside it; then a child with the same compaction id
// runs all three to the end. Orphan removal's safety age ends just before
// the appender starts, as the guarantee asks of an operator (the age
// exceeds any commit's time in flight). After each loop the independent
// check (checkCompacted) finds every record once (the table's first files
// and every window's), every manifest list, manifest and data file the
// kept snapshots name present; the compaction landed (none of the first
// run's files is live) and, with the first run abandoned and its
// snapshots expired, its files deleted; and a late retry of the first
// window, whose snapshot was expired, is recognized as landed. Each loop
// starts from an empty bucket and catalog.
// S3ONCE_ICEBERG_MAINTAIN_LOOPS sets the loops (default 3),
// S3ONCE_ICEBERG_MAINTAIN_SEED the first loop's step.
func TestMaintenanceCrashLoop(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	loops, seed := 3, 0
	for env, v := range map[string]*int{maintainLoopsEnv: &loops, maintainSeedEnv: &seed} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want a count", env, s)
			}
			*v = n
		}
	}
	client := srv.Client(s3test.ClientOptions{})
	// The appender commits the first windows beside the child; the last
	// ones are written before the cutoff and committed only after the
	// retry, so that both children's orphan removal sees old, unreferenced
	// files of commits in flight in their run folders.
	const windows, beside = 24, 16
	child := func(bucket, db, kill string, cutoff time.Time) (killed bool, out string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestMaintenanceChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1", childEndpoint+"="+endpoint, childBucket+"="+bucket, childCatalog+"="+db,
			maintainKillEnv+"="+kill, maintainCutoffEnv+"="+strconv.FormatInt(cutoff.UnixNano(), 10))
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		if cmd.ProcessState == nil { // it never started
			t.Fatalf("the maintenance child (kill at %s): %v", kill, err)
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, buf.String()
		}
		if err != nil {
			t.Fatalf("the maintenance child (kill at %s) failed: %v\n%s", kill, err, buf.String())
		}
		return false, buf.String()
	}
	began := time.Now()
	kills, during, retries := 0, 0, 0
	for i := range loops {
		kill := maintainKills[(seed+i)%len(maintainKills)]
		bucket, db := srv.Bucket(t), fmt.Sprintf("%s/maintain-%d.db", t.TempDir(), i)
		cat, err := catalog.Load(context.Background(), "crash", iceberg.Properties(crashCatalogProps(bucket, db)))
		if err != nil {
			t.Fatal(err)
		}
		tbl := openByDay(t, cat)
		first := spread(240) // two days, files of 10 records
		base := appendSmall(t, client, tbl, "base", first, 10)
		// The appender's windows: written first, committed beside the child.
		var wins [][]sink.FileResult
		var recs [][]event
		all := spread(240 + 10*windows)
		for w := range windows {
			rs := all[240+10*w : 240+10*(w+1)]
			recs = append(recs, rs)
			wins = append(wins, smallFiles(t, client, tbl, fmt.Sprintf("window-%d", w), rs, 10, eventDay))
		}
		// The cutoff: everything above was written before it (the
		// bucket's times are whole seconds at worst), everything the
		// appender and the child stage from here on after it.
		time.Sleep(1100 * time.Millisecond)
		cutoff := time.Now().Add(-time.Second)
		var mu sync.Mutex
		committed, extra := 0, 0 // windows committed, and the rounds beyond one they took
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range beside {
				select {
				case <-stop:
					return
				default:
				}
				res, err := tbl.Commit(context.Background(), fmt.Sprintf("window-%d", w), "global", wins[w])
				if err != nil {
					t.Errorf("window %d: %v", w, err)
					return
				}
				mu.Lock()
				committed++
				extra += res.Rounds - 1
				mu.Unlock()
			}
		}()
		killed, out := child(bucket, db, kill, cutoff)
		close(stop)
		wg.Wait()
		during += committed
		// The appender pays at most one refused round for each of the two
		// commits (the compaction's and the expiry's) that can land in the
		// loop.
		if extra > 2 {
			t.Errorf("loop %d (killed at %s): the appender took %d rounds beyond one per window beside the maintenance; want at most 2", i, kill, extra)
		}
		retries += extra
		if killed {
			kills++
		} else if kill != "written-2" {
			t.Fatalf("loop %d: the child was not killed at %s:\n%s", i, kill, out)
		}
		// The retry with the same id, then the rest of the windows.
		if _, out = child(bucket, db, "none", cutoff); !strings.Contains(out, "orphan report") {
			t.Fatalf("loop %d: the retry said:\n%s", i, out)
		}
		for w := committed; w < windows; w++ {
			if _, err := tbl.Commit(context.Background(), fmt.Sprintf("window-%d", w), "global", wins[w]); err != nil {
				t.Fatal(err)
			}
		}
		chk, err := checkCompacted(context.Background(), client, cat, idsOf(append([][]event{first}, recs...)...))
		if err != nil {
			t.Fatalf("loop %d (killed at %s): %v", i, kill, err)
		}
		if chk.compaction["crash-compaction"] > 1 {
			t.Fatalf("loop %d (killed at %s): compaction snapshots %v, want at most one kept", i, kill, chk.compaction)
		}
		// The compaction landed: none of the first run's files is live,
		// and, abandoned and unreferenced, each is deleted.
		for _, f := range base {
			if slices.Contains(chk.live, "s3://"+f.Bucket+"/"+f.Key) {
				t.Fatalf("loop %d (killed at %s): %s of the first run is still live after the compaction", i, kill, f.Key)
			}
			if _, err := client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &f.Bucket, Key: &f.Key}); err == nil {
				t.Fatalf("loop %d (killed at %s): %s of the abandoned first run, no longer referenced, was not deleted", i, kill, f.Key)
			}
		}
		// A late retry of the first window, whose snapshot is expired, is
		// recognized as landed and adds nothing.
		late := openByDay(t, cat)
		if res, err := late.Commit(context.Background(), "window-0", "global", wins[0]); err != nil || res.Added {
			t.Fatalf("loop %d (killed at %s): a late retry of window 0: %+v, %v; want it recognized as landed", i, kill, res, err)
		}
		t.Logf("loop %d: killed at %s (%v), %d windows committed beside it; the retry: %s; %d live files, %d records each once",
			i, kill, killed, committed, strings.Join(reportLines(out), "; "), len(chk.live), chk.records)
	}
	t.Logf("%d loops, %d kills, %d windows committed during the maintenance (the appender refused %d rounds in all), in %v", loops, kills, during, retries, time.Since(began).Round(time.Second))
}

func reportLines(out string) []string {
	var lines []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, " report: ") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}
