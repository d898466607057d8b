package committer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
)

// TestSweepLeftOverUploads: an upload of a file key that holds an object
// (a crashed attempt's, after a rerun committed the file) is aborted
// whatever its age, and its side objects deleted; a young upload of an empty
// key and its side object stay. KeepRestorable, Unconditional and a
// Committer with AllowUnconditional leave both to the cutoff.
func TestSweepLeftOverUploads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	committedKey, emptyKey := fileName("out", 1), fileName("out", 2)
	e.put(committedKey, 700)
	leftID := e.openUpload(committedKey, 300)
	openID := e.openUpload(emptyKey, 200)
	leftSide := []string{ownkeys.SideObjectKey(staging, leftID, 1, "a"), ownkeys.SideObjectKey(staging, leftID, 2, "b")}
	openSide := ownkeys.SideObjectKey(staging, openID, 1, "c")
	for _, k := range append(slices.Clone(leftSide), openSide) {
		e.put(k, 50)
	}
	allUploads, allSide := e.uploads(), e.keys(staging)
	so := committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", OlderThan: time.Hour} // everything is younger

	untouched := func(name string, rep committer.SweepReport) {
		t.Helper()
		if want := (committer.SweepCounts{Scanned: 2, Kept: 2}); rep.Uploads != want {
			t.Errorf("%s: uploads %+v, want %+v", name, rep.Uploads, want)
		}
		if want := (committer.SweepCounts{Scanned: 3, Kept: 3}); rep.SideObjects != want {
			t.Errorf("%s: side objects %+v, want %+v", name, rep.SideObjects, want)
		}
		if !slices.Equal(e.uploads(), allUploads) || !slices.Equal(e.keys(staging), allSide) {
			t.Fatalf("%s: the sweep removed something: uploads %v, side objects %v", name, e.uploads(), e.keys(staging))
		}
	}
	c := newCommitter(t, e.client, committer.Options{})
	for name, opt := range map[string]func(*committer.SweepOptions){
		"KeepRestorable": func(so *committer.SweepOptions) { so.KeepRestorable = true },
		"Unconditional":  func(so *committer.SweepOptions) { so.Unconditional = true },
	} {
		o := so
		opt(&o)
		rep, err := c.Sweep(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		untouched(name, rep)
	}
	uncond := newCommitter(t, e.client, committer.Options{AllowUnconditional: true})
	rep, err := uncond.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	untouched("a Committer with AllowUnconditional", rep)

	// A dry run names the left-overs and removes nothing.
	var items []committer.SweepItem
	dry := so
	dry.DryRun = true
	dry.Stale = func(it committer.SweepItem) { items = append(items, it) }
	rep, err = c.Sweep(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	wantUploads := committer.SweepCounts{Scanned: 2, Stale: 1, LeftOver: 1, Kept: 1, Bytes: 300}
	wantSide := committer.SweepCounts{Scanned: 3, Stale: 2, LeftOver: 2, Kept: 1, Bytes: 100}
	if rep.Uploads != wantUploads || rep.SideObjects != wantSide {
		t.Fatalf("dry run: uploads %+v, side objects %+v; want %+v, %+v", rep.Uploads, rep.SideObjects, wantUploads, wantSide)
	}
	var named []string
	for _, it := range items {
		if !it.LeftOver {
			t.Errorf("dry run: %+v not marked a left-over", it)
		}
		named = append(named, it.Key)
	}
	slices.Sort(named)
	want := append([]string{committedKey}, leftSide...)
	slices.Sort(want)
	if !slices.Equal(named, want) {
		t.Errorf("dry run named %v, want %v", named, want)
	}
	if !slices.Equal(e.uploads(), allUploads) || !slices.Equal(e.keys(staging), allSide) {
		t.Fatal("the dry run changed something")
	}

	rep, err = c.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	wantUploads.Removed, wantSide.Removed = 1, 2
	if rep.Uploads != wantUploads || rep.SideObjects != wantSide {
		t.Fatalf("sweep: uploads %+v, side objects %+v; want %+v, %+v", rep.Uploads, rep.SideObjects, wantUploads, wantSide)
	}
	if got, want := e.uploads(), []string{emptyKey + " " + openID}; !slices.Equal(got, want) {
		t.Errorf("uploads left %v, want %v", got, want)
	}
	if got := e.keys(staging); !slices.Equal(got, []string{openSide}) {
		t.Errorf("side objects left %v, want %v", got, []string{openSide})
	}
	if got := e.keys(committedKey); len(got) != 1 {
		t.Errorf("the committed file is gone: %v", got)
	}
}
