//go:build unix

package icebergtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/s3once/s3once/internal/mutant"
	"github.com/s3once/s3once/sink"
)

// faultChildEnv names, in a child of TestFaultMatrixKill, the file of its
// faultChildSpec.
const faultChildEnv = "S3ONCE_CATALOG_FAULT_CHILD"

// faultChildSpec is one attempt of a child: the catalog, the table, the
// runs to commit in order, and its fault plan's seed (0: no faults).
type faultChildSpec struct {
	Props    map[string]string
	Location string
	Runs     []string
	Files    [][]faultChildFile
	Seed     uint64
}

// faultChildFile is a FileResult with its footer, which FileResult's JSON
// leaves out.
type faultChildFile struct {
	R sink.FileResult
	F sink.ParquetFooter
}

// TestFaultChild is TestFaultMatrixKill's child: it commits the runs with
// a fault catalog whose plan may SIGKILL it right after a commit is
// applied. It does nothing in an ordinary run.
func TestFaultChild(t *testing.T) {
	path := os.Getenv(faultChildEnv)
	if os.Getenv(childEnv) != "1" || path == "" {
		t.Skip("the kill loop's child (TestFaultMatrixKill starts it)")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec faultChildSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inner, err := catalog.Load(ctx, "s3once-fault", iceberg.Properties(spec.Props))
	if err != nil {
		t.Fatal(err)
	}
	st := newFaultState(newFaultPlan(spec.Seed, faultKill, 40, 0.3))
	if spec.Seed == 0 {
		st = newFaultState(faultPlan{})
	}
	st.kill = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	st.arm()
	cat := &faultCatalog{Catalog: inner, st: st}
	tbl, err := Open(ctx, cat, table.Identifier{"lake", "events"}, reflect.TypeFor[event](), spec.Location)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range spec.Runs {
		var files []sink.FileResult
		for _, f := range spec.Files[i] {
			f.R.Footer = f.F
			files = append(files, f.R)
		}
		if _, err := tbl.Commit(ctx, id, "global", files); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFaultMatrixKill: the process killed (SIGKILL) right after the
// catalog applied its commit, then restarted from scratch (a new process,
// no state but the table) with the same run ids until one attempt ends;
// from the tenth attempt on, without faults. The table then passes the
// independent check. Seeds as TestFaultMatrix's.
func TestFaultMatrixKill(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	began := time.Now()
	fx := newFaultFixture(t)
	kills, pinnedKills, loops := 0, 0, 0
	for _, seed := range faultSeeds(t)() {
		loops++
		story, killed, err := killLoop(t, fx, loops, seed)
		kills += killed
		if seed == pinnedFaultSeeds[0] {
			pinnedKills += killed
		}
		if err != nil {
			t.Fatalf("seed %d (replay: %s=%d): %v: %v", seed, faultSeedEnv, seed, story, err)
		}
		t.Logf("seed %d: %v", seed, story)
	}
	t.Logf("%d loops, %d kills after the catalog applied a commit, in %v", loops, kills, time.Since(began).Round(time.Millisecond))
	if pinned := faultSeeds(t)()[0] == pinnedFaultSeeds[0]; pinned && pinnedKills == 0 {
		t.Errorf("no child of the pinned seed %d was killed: the kill fault never fired", pinnedFaultSeeds[0])
	}
}

// killLoop is one loop of TestFaultMatrixKill on a table of its own: the
// runs "a" and "b" committed by child processes (with env added to their
// environment) until an attempt ends. It returns the attempts' story, how
// many children were killed, and the independent check's error.
func killLoop(t *testing.T, fx *faultFixture, loop int, seed uint64, env ...string) (story []string, kills int, err error) {
	t.Helper()
	l := newFaultLoop(t, fx, loop, seed, faultKill)
	spec := faultChildSpec{Props: l.props, Location: l.loc, Runs: []string{"a", "b"}}
	var want []wantRun
	for _, id := range spec.Runs {
		files, w := l.runFiles(id)
		var cf []faultChildFile
		for _, f := range files {
			cf = append(cf, faultChildFile{R: f, F: f.Footer})
		}
		spec.Files = append(spec.Files, cf)
		want = append(want, w)
	}
	for attempt := 0; ; attempt++ {
		spec.Seed = seed + uint64(attempt)
		if attempt >= 9 {
			spec.Seed = 0
		}
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "spec.json")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultChild$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), childEnv+"=1", childEndpoint+"="+endpoint, faultChildEnv+"="+path), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			story = append(story, "ended")
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			kills++
			story = append(story, "killed")
			continue
		case attempt < 12:
			story = append(story, "failed")
			continue
		default:
			t.Fatalf("seed %d: attempt %d: %v\n%s", seed, attempt, err, out.Bytes())
		}
		break
	}
	rep, err := checkFaultTable(context.Background(), fx.client, l.inner, want)
	if err != nil {
		return story, kills, err
	}
	return append(story, fmt.Sprintf("%d snapshots, %d records", rep.snapshots, rep.records)), kills, nil
}

// The bug of keeping a run's idempotency in memory only: a child
// restarted after its commit landed commits the run again without looking
// for it, and main holds the run twice.
func TestMutantFaultMatrixSkipRunLookup(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	if !mutant.Enabled {
		t.Skip("mutation points exist only in builds with the s3once_mutant tag")
	}
	fx := newFaultFixture(t)
	for seed := uint64(1); seed <= 10; seed++ {
		story, _, err := killLoop(t, fx, int(seed), seed, mutant.EnvVar+"="+mutant.TableSkipRunLookup.String())
		if err != nil {
			t.Logf("%v caught at seed %d (%v): %v", mutant.TableSkipRunLookup, seed, story, err)
			return
		}
	}
	t.Fatalf("%v survived 10 loops of %v: the matrix does not catch it", mutant.TableSkipRunLookup, faultKill)
}
