package committer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/recoverable"
)

// scenario is one way a commit meets the server.
type scenario struct {
	name     string
	after    bool // CommitAfterRecovery rather than Commit
	dup      bool // another upload with the same bytes is committed first
	readBack bool // HEAD shows no checksum: objects are read back
}

var scenarios = []scenario{
	{name: "Commit"},
	{name: "CommitAfterRecovery", after: true},
	{name: "Commit-duplicate", dup: true},
	{name: "CommitAfterRecovery-duplicate", after: true, dup: true},
	{name: "Commit-readback", readBack: true},
	{name: "CommitAfterRecovery-duplicate-readback", after: true, dup: true, readBack: true},
}

// committer returns a Committer over f, as the scenario's server behaves.
func (sc scenario) committer(t *testing.T, f *s3fault.Client) *committer.Committer {
	var client committer.S3 = f
	if sc.readBack {
		client = noHeadCRC{f}
	}
	return newCommitter(t, client, committer.Options{})
}

// prepare writes the token (and commits the duplicate, without faults).
func (sc scenario) prepare(t *testing.T, e *env, k string, data []byte) recoverable.CommitToken {
	t.Helper()
	if sc.dup {
		dup := e.write(k, data, 0)
		if _, err := newCommitter(t, e.client, committer.Options{}).Commit(context.Background(), dup); err != nil {
			t.Fatal(err)
		}
	}
	return e.write(k, data, 2)
}

func (sc scenario) commit(c *committer.Committer, cr recoverable.CommitToken) (committer.Result, error) {
	if sc.after {
		return c.CommitAfterRecovery(context.Background(), cr)
	}
	return c.Commit(context.Background(), cr)
}

// path records the calls a fault-free commit makes (preflight included).
func (sc scenario) path(t *testing.T, e *env) []s3fault.Call {
	t.Helper()
	cr := sc.prepare(t, e, "out/path-"+sc.name, payload(400, 3000))
	f := s3fault.New(e.client)
	if _, err := sc.commit(sc.committer(t, f), cr); err != nil {
		t.Fatal(err)
	}
	return f.Calls()
}

// checkOutcome: a verified object, or a typed error and no wrong object.
func checkOutcome(t *testing.T, e *env, cr recoverable.CommitToken, data []byte, res committer.Result, err error) {
	t.Helper()
	got := e.get(cr.Key)
	if got != nil && string(got) != string(data) {
		t.Fatalf("WRONG OBJECT at %s: %d bytes, want %d (err %v)", cr.Key, len(got), len(data), err)
	}
	if err != nil {
		mustBeTyped(t, err, cr)
		return
	}
	checkResult(t, res, cr)
	if got == nil {
		t.Fatalf("success reported but no object at %s", cr.Key)
	}
}

// One fault on each call of the commit path, of each kind: the retries must
// absorb it, so the outcome is always the verified object.
func TestFaultOnEachCallOfTheCommitPath(t *testing.T) {
	e := newEnv(t)
	for _, sc := range scenarios {
		path := sc.path(t, e)
		var ops []s3fault.Op
		for _, c := range path {
			ops = append(ops, c.Op)
		}
		t.Logf("%s path: %v", sc.name, ops)
		for _, call := range path {
			for _, kind := range s3fault.Kinds {
				name := fmt.Sprintf("%s/%d-%s/%s", sc.name, call.Seq, call.Op, kind)
				t.Run(name, func(t *testing.T) {
					k := fmt.Sprintf("out/one-%s-%d-%s", sc.name, call.Seq, kind)
					data := payload(uint64(call.Seq), 3000)
					cr := sc.prepare(t, e, k, data)
					f := s3fault.New(e.client)
					f.OnAny(s3fault.AtSeq(call.Seq, kind))
					res, err := sc.commit(sc.committer(t, f), cr)
					checkOutcome(t, e, cr, data, res, err)
					if err != nil {
						t.Fatalf("a single %s fault was not absorbed: %v", kind, err)
					}
					if faults := f.Faults(); len(faults) != 1 || faults[0].Op != call.Op {
						t.Fatalf("fault landed on %+v, want %s", faults, call.Op)
					}
					if res.Warning != nil {
						t.Fatalf("warning: %v", res.Warning)
					}
					if e.uploadExists(cr) {
						t.Fatal("upload still open")
					}
					if side := e.keys(recoverable.SideObjectPrefix(cr.StagingPrefix, cr.UploadID)); len(side) != 0 {
						t.Fatalf("side objects left: %v", side)
					}
				})
			}
		}
	}
}

// Every call of one operation fails, each way: the outcome is a verified
// object or a typed error, never a wrong object. A second commit without
// faults then finishes the job (or reports the same typed condition).
func TestPersistentFaultsOnEachOperation(t *testing.T) {
	e := newEnv(t)
	ops := []s3fault.Op{
		s3fault.PutObject, s3fault.DeleteObject, s3fault.ListParts, s3fault.CompleteMultipartUpload,
		s3fault.HeadObject, s3fault.GetObject, s3fault.ListObjectsV2, s3fault.DeleteObjects,
		s3fault.AbortMultipartUpload,
	}
	for _, op := range ops {
		for _, kind := range s3fault.Kinds {
			t.Run(fmt.Sprintf("%s/%s", op, kind), func(t *testing.T) {
				k := fmt.Sprintf("out/always-%s-%s", op, kind)
				data := payload(500, 3000)
				// A same-bytes duplicate is committed first, so the path also
				// aborts a left-over upload.
				dup := e.write(k, data, 0)
				cr := e.write(k, data, 2)
				if op == s3fault.AbortMultipartUpload {
					if _, err := newCommitter(t, e.client, committer.Options{}).Commit(context.Background(), dup); err != nil {
						t.Fatal(err)
					}
				}
				f := s3fault.New(e.client)
				f.On(op, s3fault.Always(kind))
				var client committer.S3 = f
				if op == s3fault.GetObject {
					client = noHeadCRC{f} // make the read-back path run
				}
				c := newCommitter(t, client, committer.Options{MaxAttempts: 3, MaxRounds: 3})
				res, err := c.Commit(context.Background(), cr)
				checkOutcome(t, e, cr, data, res, err)
				t.Logf("outcome: created=%v already=%v warning=%v err=%v", res.Created, res.AlreadyCommitted, res.Warning != nil, err)

				// The same token, committed again without faults, converges.
				res2, err2 := newCommitter(t, e.client, committer.Options{}).CommitAfterRecovery(context.Background(), cr)
				checkOutcome(t, e, cr, data, res2, err2)
				if err2 != nil && !errors.Is(err2, committer.ErrDataLost) {
					t.Fatalf("retry without faults: %v", err2)
				}
				if err2 == nil {
					e.mustHold(k, data)
				}
			})
		}
	}
}
