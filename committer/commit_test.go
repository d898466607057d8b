package committer_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/recoverable"
)

func TestCommitCreatesVerifiedObjectAndDeletesSideObjects(t *testing.T) {
	e := newEnv(t)
	data := payload(1, 11<<20+12345) // three parts
	cr := e.write("out/a", data, 3)
	side := recoverable.SideObjectPrefix(cr.StagingPrefix, cr.UploadID)
	if n := len(e.keys(side)); n == 0 {
		t.Fatal("the test needs side objects")
	}
	c := newCommitter(t, e.client, committer.Options{})
	res, err := c.Commit(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, cr)
	if !res.Created || res.UploadAborted || res.ReadBack || res.Warning != nil || res.SideObjectsDeleted == 0 {
		t.Fatalf("result %+v", res)
	}
	e.mustHold("out/a", data)
	if keys := e.keys(side); len(keys) != 0 {
		t.Fatalf("side objects left: %v", keys)
	}
	if e.uploadExists(cr) {
		t.Fatal("upload still open")
	}
	// The preflight probe is gone too.
	if keys := e.keys(cr.StagingPrefix); len(keys) != 0 {
		t.Fatalf("staging objects left: %v", keys)
	}
}

func TestCommitTwice(t *testing.T) {
	e := newEnv(t)
	data := payload(2, 3000)
	cr := e.write("out/twice", data, 1)
	c := newCommitter(t, e.client, committer.Options{})
	ctx := context.Background()
	first, err := c.Commit(ctx, cr)
	if err != nil || !first.Created {
		t.Fatalf("first commit: %+v %v", first, err)
	}
	for name, commit := range map[string]func(context.Context, recoverable.CommitToken) (committer.Result, error){
		"Commit": c.Commit, "CommitAfterRecovery": c.CommitAfterRecovery,
	} {
		res, err := commit(ctx, cr)
		if err != nil {
			t.Fatalf("%s again: %v", name, err)
		}
		checkResult(t, res, cr)
		if !res.AlreadyCommitted || res.UploadAborted {
			t.Fatalf("%s again: %+v", name, res)
		}
	}
	// A new Committer (a restarted worker) agrees.
	res, err := newCommitter(t, e.client, committer.Options{}).CommitAfterRecovery(ctx, cr)
	if err != nil || !res.AlreadyCommitted {
		t.Fatalf("fresh committer: %+v %v", res, err)
	}
	e.mustHold("out/twice", data)
}

func TestCommitAfterAnotherAttemptWithSameBytes(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "Commit", true: "CommitAfterRecovery"}[after]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			data := payload(3, 7000)
			winner := e.write("out/same", data, 1)
			loser := e.write("out/same", data, 1)
			c := newCommitter(t, e.client, committer.Options{})
			ctx := context.Background()
			if _, err := c.Commit(ctx, winner); err != nil {
				t.Fatal(err)
			}
			commit := c.Commit
			if after {
				commit = c.CommitAfterRecovery
			}
			res, err := commit(ctx, loser)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, loser)
			if !res.AlreadyCommitted || !res.UploadAborted {
				t.Fatalf("result %+v", res)
			}
			if e.uploadExists(loser) {
				t.Fatal("the losing upload is still open")
			}
			e.mustHold("out/same", data)
		})
	}
}

func TestCommitAfterAnotherAttemptWithDifferentBytes(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "Commit", true: "CommitAfterRecovery"}[after]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			theirs := payload(4, 7000)
			ours := payload(5, 7000) // same size, other bytes
			other := e.write("out/diff", theirs, 0)
			cr := e.write("out/diff", ours, 1)
			c := newCommitter(t, e.client, committer.Options{})
			ctx := context.Background()
			if _, err := c.Commit(ctx, other); err != nil {
				t.Fatal(err)
			}
			commit := c.Commit
			if after {
				commit = c.CommitAfterRecovery
			}
			_, err := commit(ctx, cr)
			if !errors.Is(err, committer.ErrKeyTaken) {
				t.Fatalf("want ErrKeyTaken, got %v", err)
			}
			if re := mustBeTyped(t, err, cr); re.Hint == "" {
				t.Fatal("no hint for the operator")
			}
			e.mustHold("out/diff", theirs)
			if e.uploadExists(cr) {
				t.Fatal("our upload is still open")
			}
		})
	}
}

func TestCommitUploadGoneAndNoObjectIsDataLost(t *testing.T) {
	e := newEnv(t)
	cr := e.write("out/lost", payload(6, 100), 0)
	if _, err := e.client.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: &cr.Bucket, Key: &cr.Key, UploadId: &cr.UploadID}); err != nil {
		t.Fatal(err)
	}
	// A short settle window: nothing will appear (the bound itself is
	// tested in fake time by TestSettleGivesUpExactlyAtTheBound).
	c := newCommitter(t, e.client, committer.Options{MaxAttempts: 3, MaxRounds: 3, CompleteTimeout: 100 * time.Millisecond, SettleTimeout: 100 * time.Millisecond})
	for _, commit := range []func(context.Context, recoverable.CommitToken) (committer.Result, error){c.Commit, c.CommitAfterRecovery} {
		_, err := commit(context.Background(), cr)
		if !errors.Is(err, committer.ErrDataLost) {
			t.Fatalf("want ErrDataLost, got %v", err)
		}
		mustBeTyped(t, err, cr)
	}
	if e.get("out/lost") != nil {
		t.Fatal("an object appeared")
	}
}

func TestCommitDetectsOverwrittenPart(t *testing.T) {
	e := newEnv(t)
	cr := e.write("out/zombie", payload(7, 2000), 0)
	// A zombie attempt overwrites part 1 with other bytes.
	_, err := e.client.UploadPart(context.Background(), &s3.UploadPartInput{
		Bucket: &cr.Bucket, Key: &cr.Key, UploadId: &cr.UploadID, PartNumber: aws.Int32(1),
		Body: bytes.NewReader(payload(8, 2000)), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitter(t, e.client, committer.Options{})
	_, err = c.Commit(context.Background(), cr)
	if !errors.Is(err, recoverable.ErrPartsChanged) {
		t.Fatalf("want ErrPartsChanged, got %v", err)
	}
	mustBeTyped(t, err, cr)
	if e.get("out/zombie") != nil {
		t.Fatal("an object appeared")
	}
}

func TestCommitEmptyFile(t *testing.T) {
	e := newEnv(t)
	cr := e.write("out/empty", nil, 0)
	c := newCommitter(t, e.client, committer.Options{})
	res, err := c.Commit(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, cr)
	if got := e.get("out/empty"); got == nil || len(got) != 0 {
		t.Fatalf("got %v", got)
	}
	if res, err := c.Commit(context.Background(), cr); err != nil || !res.AlreadyCommitted {
		t.Fatalf("again: %+v %v", res, err)
	}
}

func TestCommitRejectsInvalidTokens(t *testing.T) {
	e := newEnv(t)
	c := newCommitter(t, e.client, committer.Options{})
	good := e.write("out/valid", payload(9, 10), 0)
	bad := map[string]recoverable.CommitToken{
		"zero":      {},
		"no key":    {Bucket: good.Bucket, UploadID: good.UploadID, Parts: good.Parts},
		"no upload": {Bucket: good.Bucket, Key: good.Key, Parts: good.Parts},
		"no parts":  {Bucket: good.Bucket, Key: good.Key, UploadID: good.UploadID},
		"negative":  {Bucket: good.Bucket, Key: good.Key, UploadID: good.UploadID, Parts: recoverable.PartList{Count: 1, Bytes: -1}},
		"too many":  {Bucket: good.Bucket, Key: good.Key, UploadID: good.UploadID, Parts: recoverable.PartList{Count: 10001}},
	}
	for name, cr := range bad {
		if _, err := c.Commit(context.Background(), cr); !errors.Is(err, recoverable.ErrInvalidToken) {
			t.Errorf("%s: want ErrInvalidToken, got %v", name, err)
		}
	}
	// A token that does not describe the upload: its parts' CRC where the
	// server lists part checksums, its digest (over the part ETags) where
	// it lists none.
	wrong := good
	wrong.Parts.CRC ^= 1
	if _, err := c.Commit(context.Background(), wrong); !errors.Is(err, recoverable.ErrPartsChanged) {
		t.Fatalf("CRC: want ErrPartsChanged, got %v", err)
	}
	wrong = writeWith(t, e.client, e.bucket, "out/valid-nocs", payload(9, 10), 0, recoverable.Options{DisableChecksums: true})
	wrong.Parts.Digest[0] ^= 1
	if _, err := c.Commit(context.Background(), wrong); !errors.Is(err, recoverable.ErrPartsChanged) {
		t.Fatalf("digest: want ErrPartsChanged, got %v", err)
	}
	if _, err := committer.New(nil, committer.Options{}); !errors.Is(err, recoverable.ErrInvalidOptions) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := committer.New(e.client, committer.Options{MaxAttempts: -1, MaxRounds: -1, BaseBackoff: 10, MaxBackoff: 5}); !errors.Is(err, recoverable.ErrInvalidOptions) {
		t.Fatalf("bad options: %v", err)
	}
}

func TestCommitWithoutChecksumsOnTheWire(t *testing.T) {
	e := newEnv(t)
	data := payload(10, 6<<20) // two parts
	cr := writeWith(t, e.client, e.bucket, "out/nocs", data, 1, recoverable.Options{DisableChecksums: true})
	c := newCommitter(t, e.client, committer.Options{})
	res, err := c.Commit(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, cr)
	e.mustHold("out/nocs", data)
}

// noHeadCRC hides the full-object checksum from HEAD, like a server that keeps
// none, so the committer must read objects back.
type noHeadCRC struct{ committer.S3 }

func (n noHeadCRC) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	out, err := n.S3.HeadObject(ctx, in, opts...)
	if out != nil {
		out.ChecksumCRC64NVME = nil
		out.ChecksumType = ""
	}
	return out, err
}

func TestCommitReadsBackWhereServerKeepsNoChecksum(t *testing.T) {
	e := newEnv(t)
	theirs := payload(11, 5<<20+100)
	ours := payload(12, 5<<20+100)
	c := newCommitter(t, noHeadCRC{e.client}, committer.Options{})
	ctx := context.Background()
	a := e.write("out/rb", theirs, 0)
	res, err := c.Commit(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || !res.ReadBack {
		t.Fatalf("result %+v", res)
	}
	same := e.write("out/rb", theirs, 0)
	if res, err := c.CommitAfterRecovery(ctx, same); err != nil || !res.AlreadyCommitted || !res.ReadBack {
		t.Fatalf("same bytes: %+v %v", res, err)
	}
	diff := e.write("out/rb", ours, 0)
	if _, err := c.CommitAfterRecovery(ctx, diff); !errors.Is(err, committer.ErrKeyTaken) {
		t.Fatalf("other bytes of the same size: %v", err)
	}
	e.mustHold("out/rb", theirs)
}

// ignoreINM drops If-None-Match, like a server that ignores it.
type ignoreINM struct{ committer.S3 }

func (i ignoreINM) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	cp := *in
	cp.IfNoneMatch = nil
	return i.S3.PutObject(ctx, &cp, opts...)
}

func (i ignoreINM) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	cp := *in
	cp.IfNoneMatch = nil
	return i.S3.CompleteMultipartUpload(ctx, &cp, opts...)
}

func TestPreflight(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := newCommitter(t, e.client, committer.Options{})
	res, err := c.Preflight(ctx, e.bucket, "stage/")
	if err != nil || !res.ConditionalWrites || res.Warning != nil {
		t.Fatalf("preflight: %+v %v", res, err)
	}
	if keys := e.keys("stage/"); len(keys) != 0 {
		t.Fatalf("probe left behind: %v", keys)
	}

	// A server that ignores If-None-Match is reported, and commits refuse.
	liar := newCommitter(t, ignoreINM{e.client}, committer.Options{})
	if _, err := liar.Preflight(ctx, e.bucket, "stage/"); !errors.Is(err, committer.ErrConditionalWritesUnsupported) {
		t.Fatalf("want ErrConditionalWritesUnsupported, got %v", err)
	}
	cr := e.write("out/p", payload(13, 100), 0)
	if _, err := liar.Commit(ctx, cr); !errors.Is(err, committer.ErrConditionalWritesUnsupported) {
		t.Fatalf("commit on a server ignoring If-None-Match: %v", err)
	}
	if e.get("out/p") != nil {
		t.Fatal("committed on an unsafe server")
	}

	// The explicit, unsafe opt-out.
	unsafe := newCommitter(t, ignoreINM{e.client}, committer.Options{AllowUnconditional: true})
	res, err = unsafe.Preflight(ctx, e.bucket, "stage/")
	if err != nil || res.ConditionalWrites {
		t.Fatalf("unconditional preflight: %+v %v", res, err)
	}
	if r, err := unsafe.Commit(ctx, cr); err != nil || !r.Created {
		t.Fatalf("unconditional commit: %+v %v", r, err)
	}
	// Even unconditionally, another upload with other bytes is refused
	// before it is completed, and the object is left alone.
	other := e.write("out/p", payload(14, 100), 0)
	if _, err := unsafe.Commit(ctx, other); !errors.Is(err, committer.ErrKeyTaken) {
		t.Fatalf("want ErrKeyTaken, got %v", err)
	}
	e.mustHold("out/p", payload(13, 100))
	if keys := e.keys("stage/"); len(keys) != 0 {
		t.Fatalf("probes left behind: %v", keys)
	}
}

func TestCommitHonoursCancelledContext(t *testing.T) {
	e := newEnv(t)
	cr := e.write("out/cancel", payload(16, 100), 0)
	c := newCommitter(t, e.client, committer.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Commit(ctx, cr); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if e.get("out/cancel") != nil {
		t.Fatal("committed under a cancelled context")
	}
	// The token still commits afterwards.
	if _, err := c.Commit(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
}
