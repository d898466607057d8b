package spill

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// inTemp makes a fresh directory the process's os.TempDir for the test, as
// TMPDIR is a worker's.
func inTemp(t *testing.T) string {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	if dir := os.Getenv("TMPDIR"); os.TempDir() == dir {
		return dir
	}
	t.Skip("os.TempDir ignores TMPDIR here")
	return ""
}

// TestSpillRoundTrip: records added to a spill come back from the buckets
// their hash picks, once each, with the sizes and counts the spill kept,
// and Remove leaves nothing behind.
func TestSpillRoundTrip(t *testing.T) {
	tmp := inTemp(t)
	sp, err := New(MinBuffer)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	want := make([][][]byte, Buckets)
	for i := range 5000 {
		r := fmt.Appendf(nil, "record %d %s\n", i, strings.Repeat("z", i%50))
		if i%700 == 0 {
			r = nil // an empty record
		}
		recs = append(recs, r)
		want[Hash(r)] = append(want[Hash(r)], r)
		if err := sp.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 8, Buckets} {
		per := Buckets / n
		var all int64
		for j := range n {
			got, err := sp.Read(j*per, (j+1)*per)
			if err != nil {
				t.Fatal(err)
			}
			w := slices.Concat(want[j*per : (j+1)*per]...)
			if !slices.EqualFunc(got, w, bytes.Equal) {
				t.Fatalf("%d runs: run %d read back %d records, want %d in bucket order", n, j, len(got), len(w))
			}
			if sp.Count(j*per, (j+1)*per) != int64(len(w)) {
				t.Fatalf("%d runs: run %d counts %d records, holds %d", n, j, sp.Count(j*per, (j+1)*per), len(w))
			}
			all += sp.Size(j*per, (j+1)*per)
		}
		var size int64
		for _, r := range recs {
			size += int64(len(r))
		}
		if all != size {
			t.Fatalf("%d runs: sizes add up to %d, the records hold %d", n, all, size)
		}
	}
	// A bucket cut short on disk is an error, never fewer records.
	if err := os.Truncate(filepath.Join(sp.Dir(), "bucket-00"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Read(0, 1); err == nil {
		t.Fatal("a cut bucket read back without an error")
	}
	if err := sp.Remove(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Fatalf("%d entries left after Remove", len(ents))
	}
}

// TestSubBatches: the least power of two that makes sub-batches half of
// the limit on average, at most Buckets.
func TestSubBatches(t *testing.T) {
	for _, c := range []struct {
		total, limit int64
		want         int
	}{{0, 100, 1}, {50, 100, 1}, {51, 100, 2}, {100, 100, 2}, {101, 100, 4}, {400, 100, 8}, {401, 100, 16}, {1 << 40, 100, Buckets}, {10, 1, 16}} {
		if got := SubBatches(c.total, c.limit); got != c.want {
			t.Errorf("SubBatches(%d, %d) = %d, want %d", c.total, c.limit, got, c.want)
		}
	}
}

// TestHashStable pins Hash: records in checkpoints and reruns fall in the
// same sub-batches whatever the build.
func TestHashStable(t *testing.T) {
	got := []int{Hash(nil), Hash([]byte("a\n")), Hash([]byte("s3once")), Hash(bytes.Repeat([]byte{0xff}, 100))}
	want := []int{42, 50, 9, 48}
	if !slices.Equal(got, want) {
		t.Fatalf("Hash gives %v, want %v", got, want)
	}
}

// spillHolderEnv, when set, makes the test binary a helper that starts a
// spill in TMPDIR, prints its directory and waits to be killed.
const spillHolderEnv = "S3ONCE_SPILL_HOLDER"

// TestSpillHolderChild is the helper process of TestStaleSpillRemoved; run
// on its own it does nothing.
func TestSpillHolderChild(t *testing.T) {
	if os.Getenv(spillHolderEnv) == "" {
		t.Skip("helper process of TestStaleSpillRemoved")
	}
	sp, err := New(BufferSize)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if err := sp.Add([]byte("a record in a spill of a worker about to be killed\n")); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	// The spill must stay reachable while the helper waits: were it garbage,
	// a collection would run its lock file's cleanup, which closes the file
	// and so drops the lock, and the helper would look dead while it lives.
	// The helper collects before it reports, so that a spill left unreachable
	// shows here every time, not only when a busy machine happens to collect.
	heldSpill = sp
	dir := sp.dir
	runtime.GC()
	runtime.GC()
	fmt.Println("spill", dir)
	for { // until SIGKILL; a sleep, since a test binary of nothing but this
		// goroutine would otherwise be stopped as deadlocked
		time.Sleep(time.Hour)
	}
}

// heldSpill keeps the helper's spill, and so its lock, reachable.
var heldSpill *Spill

// removeStale runs RemoveStale on os.TempDir now, as the batching DoFn's
// Setup does when a worker builds it.
func removeStale(t *testing.T) {
	t.Helper()
	if _, err := RemoveStale(os.TempDir(), time.Now()); err != nil {
		t.Fatalf("RemoveStale: %v", err)
	}
}

// startSpillHolder starts a helper process that spills into the test's
// TMPDIR and holds its spill's lock; it returns the process and the spill
// directory.
func startSpillHolder(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestSpillHolderChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), spillHolderEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper process: %v", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "spill ")
	if !ok {
		t.Fatalf("helper process said %q", line)
	}
	return cmd, dir
}

// age sets a directory's modification time d into the past.
func age(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestStaleSpillRemoved: a helper process spills and is SIGKILLed; its spill
// directory outlives it, and the next RemoveStale (the batching DoFn's
// Setup) removes it. While the helper lived, the same directory, although
// old, survived: its lock told that a worker still used it.
func TestStaleSpillRemoved(t *testing.T) {
	tmp := inTemp(t)
	cmd, dir := startSpillHolder(t)
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "s3once-batch-") {
		t.Fatalf("helper spilled into %s; want an s3once-batch- directory in %s", dir, tmp)
	}
	age(t, dir, 2*time.Hour)
	removeStale(t)
	if !exists(t, dir) {
		t.Fatal("RemoveStale removed the spill directory of a live worker")
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL, by its PID
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper exited cleanly; want killed")
	}
	if !exists(t, dir) {
		t.Fatal("the killed helper's spill directory is gone before RemoveStale ran; the test proves nothing")
	}
	age(t, dir, 2*time.Hour)
	removeStale(t)
	if exists(t, dir) {
		t.Fatalf("RemoveStale left %s, the spill directory of a killed worker", dir)
	}
}

// TestLiveSpillSurvives: RemoveStale leaves the spill directories of live workers,
// in another process or in this one, however old, and young directories
// whose lock is free (the age floor), and anything not named like a spill.
func TestLiveSpillSurvives(t *testing.T) {
	tmp := inTemp(t)
	_, other := startSpillHolder(t)
	age(t, other, 48*time.Hour)

	mine, err := New(BufferSize)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Remove()
	age(t, mine.dir, 48*time.Hour)

	// A spill whose worker is gone, with its lock free, but younger than the
	// age floor.
	young, err := New(BufferSize)
	if err != nil {
		t.Fatal(err)
	}
	youngDir := young.dir
	releaseLock(t, young)
	age(t, youngDir, staleAge/2)

	// Not a spill directory: a file and a directory of other names.
	otherFile := filepath.Join(tmp, "s3once-batch-not-a-dir")
	if err := os.WriteFile(otherFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, otherFile, 48*time.Hour)
	foreign := filepath.Join(tmp, "someone-else-batch-1")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	age(t, foreign, 48*time.Hour)

	removeStale(t)
	for _, p := range []string{other, mine.dir, youngDir, otherFile, foreign} {
		if !exists(t, p) {
			t.Errorf("RemoveStale removed %s", p)
		}
	}

	// Once past the floor, the free one goes; the others stay.
	age(t, youngDir, staleAge+time.Minute)
	removeStale(t)
	if exists(t, youngDir) {
		t.Errorf("RemoveStale left %s, free and older than the age floor", youngDir)
	}
	for _, p := range []string{other, mine.dir, otherFile, foreign} {
		if !exists(t, p) {
			t.Errorf("RemoveStale removed %s", p)
		}
	}
	// The live spill in this process still works after the scans.
	if err := mine.Add([]byte("still writing\n")); err != nil {
		t.Fatal(err)
	}
	if err := mine.Finish(); err != nil {
		t.Fatal(err)
	}
	if got, err := mine.Read(0, Buckets); err != nil || len(got) != 1 {
		t.Fatalf("read back %d records, %v; want 1", len(got), err)
	}
}

// releaseLock makes sp look like the spill of a worker that died: its files
// stay, its lock is free.
func releaseLock(t *testing.T, sp *Spill) {
	t.Helper()
	for i, f := range sp.files {
		if f != nil {
			_ = f.Close()
			sp.files[i] = nil
		}
	}
	if err := sp.lock.Close(); err != nil {
		t.Fatal(err)
	}
	sp.lock = nil
}
