//go:build unix

package icebergtable

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The compaction crash loop's child runs Compact in a process of its own
// and kills itself (SIGKILL) at the step the parent names.
const (
	compactKillEnv  = "S3ONCE_ICEBERG_COMPACT_KILL"  // the step: see compactKills
	compactLoopsEnv = "S3ONCE_ICEBERG_COMPACT_LOOPS" // loops of the crash test (default 3)
	compactSeedEnv  = "S3ONCE_ICEBERG_COMPACT_SEED"  // the first loop's kill step (default 0)
)

// compactKills are the steps a child is killed at, in the order the loops
// take them from the seed on: after its first file is written, right
// after the catalog applied its commit (the answer never read), before the
// plan is written, once the plan holds, after its second file.
var compactKills = []string{"written-1", "applied", "plan", "planned", "written-2"}

// killAfterCommit is a catalog that kills the process right after a
// commit the inner catalog applied.
type killAfterCommit struct{ catalog.Catalog }

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
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return md, loc, err
}

// TestCompactChild is TestCompactCrashLoop's child; it does nothing in an
// ordinary run.
func TestCompactChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" || os.Getenv(compactKillEnv) == "" {
		t.Skip("the compaction crash loop's child (TestCompactCrashLoop starts it)")
	}
	ctx := context.Background()
	kill := os.Getenv(compactKillEnv)
	cat, err := catalog.Load(ctx, "crash", iceberg.Properties(crashCatalogProps(os.Getenv(childBucket), os.Getenv(childCatalog))))
	if err != nil {
		t.Fatal(err)
	}
	if kill == "applied" {
		cat = killAfterCommit{cat}
	}
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), "", byDay...)
	if err != nil {
		t.Fatal(err)
	}
	tbl.onCompact = func(step string, n int) {
		if kill == step || kill == fmt.Sprintf("%s-%d", step, n) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	rep, err := tbl.Compact(ctx, Compaction{ID: "crash-compaction"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("compaction report: %+v\n", rep)
}

// TestCompactCrashLoop: a child process runs Compact and is killed with
// SIGKILL at a seeded step (compactKills) while the parent's appender
// commits windows beside it; then a child with the same compaction id
// runs to the end. After each loop the independent check (checkCompacted)
// finds every record once (the table's first files and every window's),
// every file any snapshot names exists, and the compaction's snapshot
// once in main's ancestry. Each loop starts from an empty bucket and
// catalog. S3ONCE_ICEBERG_COMPACT_LOOPS sets the loops (default 3),
// S3ONCE_ICEBERG_COMPACT_SEED the first loop's step.
func TestCompactCrashLoop(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	loops, seed := 3, 0
	for env, v := range map[string]*int{compactLoopsEnv: &loops, compactSeedEnv: &seed} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want a count", env, s)
			}
			*v = n
		}
	}
	client := srv.Client(s3test.ClientOptions{})
	const windows = 24
	child := func(bucket, db, kill string) (killed bool, out string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompactChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1", childEndpoint+"="+endpoint, childBucket+"="+bucket, childCatalog+"="+db, compactKillEnv+"="+kill)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, buf.String()
		}
		if err != nil {
			t.Fatalf("the compaction child (kill at %s) failed: %v\n%s", kill, err, buf.String())
		}
		return false, buf.String()
	}
	began := time.Now()
	kills, during, retries := 0, 0, 0
	for i := range loops {
		kill := compactKills[(seed+i)%len(compactKills)]
		bucket, db := srv.Bucket(t), fmt.Sprintf("%s/compact-%d.db", t.TempDir(), i)
		cat, err := catalog.Load(context.Background(), "crash", iceberg.Properties(crashCatalogProps(bucket, db)))
		if err != nil {
			t.Fatal(err)
		}
		tbl := openByDay(t, cat)
		first := spread(240) // two days, files of 10 records
		appendSmall(t, client, tbl, "base", first, 10)
		// The appender's windows: written first, committed beside the child.
		var wins [][]sink.FileResult
		var recs [][]event
		all := spread(240 + 10*windows)
		for w := range windows {
			rs := all[240+10*w : 240+10*(w+1)]
			recs = append(recs, rs)
			wins = append(wins, smallFiles(t, client, tbl, fmt.Sprintf("window-%d", w), rs, 10, eventDay))
		}
		var mu sync.Mutex
		committed, extra := 0, 0 // windows committed, and the rounds beyond one they took
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range windows {
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
		killed, out := child(bucket, db, kill)
		close(stop)
		wg.Wait()
		during += committed
		// The appender pays at most one refused round for the one
		// compaction commit that can land in the loop.
		if extra > 1 {
			t.Errorf("loop %d (killed at %s): the appender took %d rounds beyond one per window beside a compaction; want at most 1", i, kill, extra)
		}
		retries += extra
		if killed {
			kills++
		} else if kill != "written-2" {
			t.Fatalf("loop %d: the child was not killed at %s:\n%s", i, kill, out)
		}
		// The rest of the windows, then the retry with the same id.
		for w := committed; w < windows; w++ {
			if _, err := tbl.Commit(context.Background(), fmt.Sprintf("window-%d", w), "global", wins[w]); err != nil {
				t.Fatal(err)
			}
		}
		if _, out = child(bucket, db, "none"); !strings.Contains(out, "compaction report") {
			t.Fatalf("loop %d: the retry said:\n%s", i, out)
		}
		chk, err := checkCompacted(context.Background(), client, cat, idsOf(append([][]event{first}, recs...)...))
		if err != nil {
			t.Fatalf("loop %d (killed at %s): %v", i, kill, err)
		}
		if chk.compaction["crash-compaction"] != 1 {
			t.Fatalf("loop %d (killed at %s): compaction snapshots %v, want one", i, kill, chk.compaction)
		}
		t.Logf("loop %d: killed at %s (%v), %d windows committed beside it; the retry: %s; %d live files, %d records each once",
			i, kill, killed, committed, strings.TrimSpace(reportLine(out)), len(chk.live), chk.records)
	}
	t.Logf("%d loops, %d kills, %d windows committed during a compaction (the appender refused %d rounds in all), in %v", loops, kills, during, retries, time.Since(began).Round(time.Second))
}

func reportLine(out string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "compaction report") {
			return line
		}
	}
	return ""
}
