package committer_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/recoverable"
)

// putAll writes a small object at each key.
func (e *env) putAll(keys ...string) {
	e.t.Helper()
	for _, k := range keys {
		e.put(k, 10)
	}
}

// TestCommitCleansOnlyOwnSideObjects: a commit deletes side objects only
// under the committer's staging prefix, and only keys named as side objects.
// A token with StagingPrefix "reports" and UploadID "2024" leaves reports/2024/
// as it was (the commit succeeds, with a typed warning), and a token with the
// right staging prefix but a made-up upload ID deletes nothing but keys of
// the side-object pattern.
func TestCommitCleansOnlyOwnSideObjects(t *testing.T) {
	e := newEnv(t)
	data := payload(31, 4000)
	cr := e.write("out/own", data, 1)
	c := newCommitter(t, e.client, committer.Options{})
	ctx := context.Background()
	if _, err := c.Commit(ctx, cr); err != nil {
		t.Fatal(err)
	}

	reports := []string{"reports/2024/00000000000000000001", "reports/2024/q1.csv", "reports/2024/sub/00000000000000000002-ab"}
	e.putAll(reports...)
	hostile := cr
	hostile.StagingPrefix, hostile.UploadID = "reports", "2024"
	res, err := c.CommitAfterRecovery(ctx, hostile)
	if err != nil || !res.AlreadyCommitted {
		t.Fatalf("commit of a token naming another staging prefix: %+v %v; the commit itself must succeed", res, err)
	}
	if !errors.Is(res.Warning, recoverable.ErrForeignStaging) || res.SideObjectsDeleted != 0 {
		t.Fatalf("warning %v, %d deleted; want ErrForeignStaging and nothing deleted", res.Warning, res.SideObjectsDeleted)
	}
	var re *recoverable.Error
	if !errors.As(res.Warning, &re) || re.Hint == "" {
		t.Fatalf("warning %v is not a typed error with a hint", res.Warning)
	}
	if got := e.keys("reports/"); !slices.Equal(got, reports) {
		t.Fatalf("reports/ holds %v after the commit, want %v", got, reports)
	}

	// Under the committer's own staging prefix: an upload ID that names a
	// folder of other things deletes only what looks like a side object.
	own := recoverable.SideObjectPrefix(recoverable.DefaultStagingPrefix, "2024")
	keep := []string{own + "00000000000000000001-a.b", own + "00000000000000000001/x", own + "notes.txt"} // listing order
	side := own + "00000000000000000003-0a1b2c3d"
	e.putAll(append(keep, side)...)
	made := cr
	made.UploadID = "2024"
	res, err = c.CommitAfterRecovery(ctx, made)
	if err != nil || res.Warning != nil {
		t.Fatalf("commit: %+v %v", res, err)
	}
	if got := e.keys(own); !slices.Equal(got, keep) {
		t.Fatalf("%s holds %v, want %v (only the side object deleted)", own, got, keep)
	}
	e.mustHold("out/own", data)
}
