package preflight_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/preflight"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// A sound bucket passes, with and without checksums and under another
// staging prefix, and every probe is removed.
func TestRunPasses(t *testing.T) {
	bucket := srv.Bucket(t)
	for _, tc := range []struct {
		prefix, staging string
		disable         bool
	}{{"", ".s3once/staging/", false}, {"deep/er/prefix", ".s3once/staging/", false}, {"out", "_tmp/staging", true}} {
		tg := target(bucket)
		tg.Prefix, tg.StagingPrefix, tg.DisableChecksums = tc.prefix, tc.staging, tc.disable
		if r := preflight.Run(testContext(t), testClient(), tg); len(r.Problems)+len(r.Unchecked)+len(r.Leftovers) > 0 {
			t.Errorf("%+v: %+v", tc, r)
		}
	}
	checkEmpty(t, bucket)
}

// The settings marker's check gets a client over the preflight's own, and
// its failure is a problem naming the marker's key; without a check (an
// invalid configuration) it is listed as unchecked.
func TestRunChecksTheFolder(t *testing.T) {
	bucket := srv.Bucket(t)
	tg := target(bucket)
	var called bool
	refused := errors.New("the folder was written with other settings")
	tg.CheckFolder = func(ctx context.Context, c *s3bucket.Client) error {
		called = c != nil
		return refused
	}
	r := preflight.Run(testContext(t), testClient(), tg)
	failed(t, r)
	if !called {
		t.Error("the check was not given a client")
	}
	key := ownkeys.SettingsKey("out")
	if len(r.Problems) != 1 || !errors.Is(r.Problems[0].Err, refused) || r.Problems[0].Target != "s3://"+bucket+"/"+key {
		t.Errorf("want one problem naming %s, got %+v", key, r.Problems)
	}

	tg.CheckFolder = nil
	r = preflight.Run(testContext(t), testClient(), tg)
	if len(r.Problems) != 0 || len(r.Unchecked) != 1 || !strings.Contains(r.Unchecked[0], "settings marker") {
		t.Errorf("without a check: want the marker unchecked and no problem, got %+v", r)
	}
	checkEmpty(t, bucket)
}

// Every refused call is reported, each with the permission it needs, and
// the probes are still removed.
func TestRunReportsEveryDeniedCall(t *testing.T) {
	bucket := srv.Bucket(t)
	api := &denyAPI{API: testClient(), deny: map[s3fault.Op]bool{
		s3fault.HeadObject:   true,
		s3fault.UploadPart:   true,
		s3fault.DeleteObject: true,
	}}
	r := preflight.Run(testContext(t), api, target(bucket))
	failed(t, r)
	perms := map[string]int{}
	for _, p := range r.Problems {
		perms[p.Permission]++
	}
	// UploadPart is refused twice: under the output prefix and under the
	// staging prefix (where the completion probe then cannot run, nor the
	// HEAD of the object it would have made).
	want := map[string]int{"s3:GetObject": 1, "s3:PutObject": 2, "s3:DeleteObject": 1}
	for perm, n := range want {
		if perms[perm] != n {
			t.Errorf("%d problems need %s, want %d (problems: %+v)", perms[perm], perm, n, r.Problems)
		}
	}
	if len(r.Problems) != 4 {
		t.Errorf("got %d problems, want 4", len(r.Problems))
	}
	// The side object the denied DeleteObject left is removed by the
	// DeleteObjects of the clean-up.
	if len(r.Leftovers) != 0 {
		t.Errorf("leftovers: %v", r.Leftovers)
	}
	checkEmpty(t, bucket)
}

// A server that ignores If-None-Match fails the preflight, for PutObject and
// for CompleteMultipartUpload.
func TestRunConditionalWritesIgnored(t *testing.T) {
	bucket := srv.Bucket(t)
	api := &denyAPI{API: testClient(), ignoreCondn: true}
	r := preflight.Run(testContext(t), api, target(bucket))
	failed(t, r)
	var complete, put bool
	for _, p := range r.Problems {
		if !errors.Is(p.Err, committer.ErrConditionalWritesUnsupported) {
			t.Errorf("problem %q does not wrap committer.ErrConditionalWritesUnsupported", p)
		}
		complete = complete || strings.Contains(p.Check, "second completion")
		put = put || strings.Contains(p.Check, "conditional PutObject")
	}
	if !complete || !put {
		t.Errorf("want both the completion and the PutObject probes reported, got %+v", r.Problems)
	}
	checkEmpty(t, bucket)
}

// Every probe is removed when the caller's context ends halfway.
func TestRunCancelledCleansUp(t *testing.T) {
	bucket := srv.Bucket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := &cancelAfter{API: testClient(), cancel: cancel}
	r := preflight.Run(ctx, api, target(bucket))
	failed(t, r)
	var cancelled bool
	for _, p := range r.Problems {
		cancelled = cancelled || errors.Is(p.Err, context.Canceled)
	}
	if !cancelled {
		t.Errorf("got %+v, want a cancelled preflight", r.Problems)
	}
	checkEmpty(t, bucket)
	if out, lerr := testClient().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}); lerr == nil && len(out.Uploads) > 0 {
		t.Errorf("uploads left: %d", len(out.Uploads))
	}
}

// cancelAfter cancels the context right after the first part is uploaded,
// while an upload is open.
type cancelAfter struct {
	preflight.API
	cancel context.CancelFunc
}

func (c *cancelAfter) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	out, err := c.API.UploadPart(ctx, in, o...)
	c.cancel()
	return out, err
}

// TestRunOneAttemptPerProbe: each probe is made once. A probe whose call
// fails as a transient failure would (the request never sent, or its
// answer lost) is reported at once, not made again: the call after it in
// the log is never the same call, and the preflight fails.
func TestRunOneAttemptPerProbe(t *testing.T) {
	// Not AbortMultipartUpload: the clean-up aborts an upload whose probe
	// failed to, as it removes every probe's leftovers.
	ops := []s3fault.Op{s3fault.ListObjectsV2, s3fault.CreateMultipartUpload, s3fault.UploadPart, s3fault.ListParts,
		s3fault.HeadObject, s3fault.GetObject, s3fault.PutObject, s3fault.DeleteObject, s3fault.CompleteMultipartUpload}
	for _, op := range ops {
		for _, kind := range []s3fault.Kind{s3fault.BeforeSend, s3fault.LostResponse} {
			t.Run(fmt.Sprintf("%s-%v", op, kind), func(t *testing.T) {
				bucket := srv.Bucket(t)
				f := s3fault.New(testClient())
				f.On(op, s3fault.Nth(1, kind))
				if r := preflight.Run(testContext(t), f, target(bucket)); len(r.Problems) == 0 {
					t.Fatalf("the preflight passed although its first %s failed", op)
				}
				calls := f.Calls()
				failed := -1
				for i, c := range calls {
					if c.Op == op && c.N == 1 {
						failed = i
					}
				}
				if failed < 0 {
					t.Fatalf("the preflight made no %s call", op)
				}
				if next := failed + 1; next < len(calls) && calls[next].Op == op && calls[next].Key == calls[failed].Key {
					t.Errorf("the failed %s of %s was made again", op, calls[failed].Key)
				}
			})
		}
	}
}

// DisableChecksums on a bucket whose ETags are not MD5s (as under SSE-KMS):
// a part uploaded again with the same bytes could never be recognised, so
// the preflight refuses the combination and names the setting. The same
// bucket with checksums on, or DisableChecksums on a bucket with MD5 ETags,
// passes.
func TestRunRefusesDisableChecksumsWithoutMD5ETags(t *testing.T) {
	for _, tc := range []struct {
		name              string
		random, disable   bool
		wantETagsProblems int
	}{
		{"KMS-like ETags, checksums off", true, true, 1},
		{"KMS-like ETags, checksums on", true, false, 0},
		{"MD5 ETags, checksums off", false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := srv.Bucket(t)
			api := s3fault.New(testClient())
			if tc.random {
				api.RandomETags()
			}
			tg := target(bucket)
			tg.DisableChecksums = tc.disable
			r := preflight.Run(testContext(t), api, tg)
			n := 0
			for _, p := range r.Problems {
				if strings.Contains(p.Check, "part identity") {
					n++
					if !strings.Contains(p.Hint, "DisableChecksums") {
						t.Errorf("hint %q does not name the setting", p.Hint)
					}
				} else {
					t.Errorf("unexpected problem: %+v", p)
				}
			}
			if n != tc.wantETagsProblems {
				t.Fatalf("%d part-identity problems, want %d (report: %+v)", n, tc.wantETagsProblems, r)
			}
			checkEmpty(t, bucket)
		})
	}
}
