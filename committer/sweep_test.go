package committer_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

const staging = recoverable.DefaultStagingPrefix

// openUpload starts an upload at key holding one part of size bytes.
func (e *env) openUpload(key string, size int) string {
	e.t.Helper()
	ctx := context.Background()
	out, err := e.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &e.bucket, Key: &key})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &e.bucket, Key: &key, UploadId: out.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, size))})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.UploadId)
}

func (e *env) put(key string, size int) {
	e.t.Helper()
	_, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &e.bucket, Key: &key, Body: bytes.NewReader(make([]byte, size))})
	if err != nil {
		e.t.Fatal(err)
	}
}

// serverTime is the server's clock, read from a probe object's LastModified.
func (e *env) serverTime() time.Time {
	e.t.Helper()
	e.put("clock-probe", 1)
	out, err := e.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &e.bucket, Key: aws.String("clock-probe")})
	if err != nil {
		e.t.Fatal(err)
	}
	_, _ = e.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &e.bucket, Key: aws.String("clock-probe")})
	return aws.ToTime(out.LastModified)
}

// uploads lists the open uploads as "key upload" strings, sorted.
func (e *env) uploads() []string {
	e.t.Helper()
	out, err := e.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &e.bucket})
	if err != nil {
		e.t.Fatal(err)
	}
	var us []string
	for _, u := range out.Uploads {
		us = append(us, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	slices.Sort(us)
	return us
}

// sweepFixture makes stale things, waits, reads the server's clock as the
// cutoff, then makes fresh things.
type sweepFixture struct {
	cutoff                     time.Time
	staleUploads, freshUploads []string
	outside                    string
	staleSide, freshSide       []string
}

func newSweepFixture(e *env, wait time.Duration) sweepFixture {
	var fx sweepFixture
	s1, s2 := fileName("out", 1), fileName("out", 2)
	fx.staleUploads = []string{s1 + " " + e.openUpload(s1, 1000), s2 + " " + e.openUpload(s2, 2000)}
	fx.outside = "other/s3 " + e.openUpload("other/s3", 10)
	for i, n := range []int{500, 700} {
		k := staging + "stale-upload-" + string(rune('a'+i)) + "/00000000000000000001-x"
		e.put(k, n)
		fx.staleSide = append(fx.staleSide, k)
	}
	time.Sleep(wait)
	fx.cutoff = e.serverTime()
	f1 := fileName("out", 3)
	fx.freshUploads = []string{f1 + " " + e.openUpload(f1, 3000)}
	k := staging + "fresh-upload/00000000000000000001-y"
	e.put(k, 900)
	fx.freshSide = []string{k}
	return fx
}

// fileName is the name of the sink's file number n under prefix.
func fileName(prefix string, n int) string {
	return ownkeys.FileKey(prefix, "", ownkeys.FileName{Window: "global", Shard: n % 4, Shards: 4, File: n, Ext: ".txt"})
}

func TestSweepRemovesExactlyTheStale(t *testing.T) {
	e := newEnv(t)
	fx := newSweepFixture(e, 1100*time.Millisecond)
	c := newCommitter(t, e.client, committer.Options{})
	ctx := context.Background()
	allUploads := e.uploads()
	allSide := e.keys(staging)

	// A dry run counts and changes nothing.
	progress := 0
	rep, err := c.Sweep(ctx, committer.SweepOptions{
		Bucket: e.bucket, Prefix: "out/", Cutoff: fx.cutoff, DryRun: true, Force: true,
		Progress: func(committer.SweepReport) { progress++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	wantUploads := committer.SweepCounts{Scanned: 3, Stale: 2, Kept: 1, Bytes: 3000}
	wantSide := committer.SweepCounts{Scanned: 3, Stale: 2, Kept: 1, Bytes: 1200}
	if rep.Uploads != wantUploads || rep.SideObjects != wantSide || !rep.DryRun {
		t.Fatalf("dry run report: uploads %+v side %+v", rep.Uploads, rep.SideObjects)
	}
	if progress == 0 {
		t.Fatal("no progress reported")
	}
	if !slices.Equal(e.uploads(), allUploads) || !slices.Equal(e.keys(staging), allSide) {
		t.Fatal("the dry run changed something")
	}

	rep, err = c.Sweep(ctx, committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", Cutoff: fx.cutoff, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	wantUploads.Removed, wantSide.Removed = 2, 2
	if rep.Uploads != wantUploads || rep.SideObjects != wantSide {
		t.Fatalf("report: uploads %+v side %+v", rep.Uploads, rep.SideObjects)
	}
	want := append(append([]string(nil), fx.freshUploads...), fx.outside)
	slices.Sort(want)
	if got := e.uploads(); !slices.Equal(got, want) {
		t.Fatalf("uploads left %v, want %v", got, want)
	}
	if got := e.keys(staging); !slices.Equal(got, fx.freshSide) {
		t.Fatalf("side objects left %v, want %v", got, fx.freshSide)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "cutoff") {
		t.Fatalf("no warning about the short cutoff: %v", rep.Warnings)
	}
}

// Ages come from the server's clock: with OlderThan, what is older by the
// server's Date goes, what is younger stays. The Date header has a one-second
// grain and versitygw refreshes it once a second, so it may trail real time by
// up to two seconds: the stale things are made 6.3s before the fresh ones,
// and the cutoff is 4s, which leaves the fresh ones 4s to stay fresh in until
// the sweep lists them (on a loaded machine, a few calls can take seconds).
func TestSweepOlderThanByServerClock(t *testing.T) {
	e := newEnv(t)
	fx := newSweepFixture(e, 6300*time.Millisecond)
	c := newCommitter(t, e.client, committer.Options{})
	rep, err := c.Sweep(context.Background(), committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", OlderThan: 4 * time.Second, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Removed != 2 || rep.SideObjects.Removed != 2 || rep.Uploads.Kept != 1 || rep.SideObjects.Kept != 1 {
		t.Fatalf("report: uploads %+v side %+v", rep.Uploads, rep.SideObjects)
	}
	if d := rep.ServerNow.Sub(rep.Cutoff); d != 4*time.Second {
		t.Fatalf("cutoff %v before server time, want 4s", d)
	}
	if rep.ClockSkew > 2*time.Second || rep.ClockSkew < -2*time.Second {
		t.Fatalf("clock skew %v against a local server", rep.ClockSkew)
	}
	if got := e.keys(staging); !slices.Equal(got, fx.freshSide) {
		t.Fatalf("side objects left %v", got)
	}
}

func TestSweepRefusesBadOptions(t *testing.T) {
	e := newEnv(t)
	c := newCommitter(t, e.client, committer.Options{})
	ctx := context.Background()
	for name, so := range map[string]committer.SweepOptions{
		"no bucket":    {Prefix: "out/", OlderThan: time.Hour},
		"no prefix":    {Bucket: e.bucket, OlderThan: time.Hour},
		"no age":       {Bucket: e.bucket, Prefix: "out/"},
		"negative age": {Bucket: e.bucket, Prefix: "out/", OlderThan: -time.Hour},
		"slash":        {Bucket: e.bucket, Prefix: "out/", OlderThan: time.Hour, StagingPrefix: "/x"},
	} {
		if _, err := c.Sweep(ctx, so); !errors.Is(err, recoverable.ErrInvalidOptions) {
			t.Errorf("%s: want ErrInvalidOptions, got %v", name, err)
		}
	}
	future := time.Now().Add(time.Hour)
	if _, err := c.Sweep(ctx, committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", Cutoff: future}); !errors.Is(err, recoverable.ErrInvalidOptions) {
		t.Fatalf("cutoff in the future: %v", err)
	}
	// WholeBucket allows the empty prefix.
	if _, err := c.Sweep(ctx, committer.SweepOptions{Bucket: e.bucket, WholeBucket: true, OlderThan: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// lifecycle serves fixed lifecycle rules.
type lifecycle struct {
	committer.S3
	rules []types.LifecycleRule
}

func (l lifecycle) GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, opts ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error) {
	return &s3.GetBucketLifecycleConfigurationOutput{Rules: l.rules}, nil
}

func TestSweepWarnsAboutLifecycleRules(t *testing.T) {
	e := newEnv(t)
	days := func(n int32) *int32 { return &n }
	rules := []types.LifecycleRule{
		{ID: aws.String("abort-soon"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("out/")},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: days(1)}},
		{ID: aws.String("expire-staging"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{Prefix: aws.String(".s3once/")}},
			Expiration: &types.LifecycleExpiration{Days: days(2)}},
		{ID: aws.String("disabled"), Status: types.ExpirationStatusDisabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: days(1)}},
		{ID: aws.String("elsewhere"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: days(1)}},
		{ID: aws.String("long-enough"), Status: types.ExpirationStatusEnabled, Prefix: aws.String(""),
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: days(7)}},
	}
	c := newCommitter(t, lifecycle{e.client, rules}, committer.Options{})
	rep, err := c.Sweep(context.Background(), committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", OlderThan: 72 * time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Warnings, "\n")
	if len(rep.Warnings) != 2 || !strings.Contains(joined, `"abort-soon"`) || !strings.Contains(joined, `"expire-staging"`) {
		t.Fatalf("warnings: %v", rep.Warnings)
	}
	// versitygw has no lifecycle rules (501): no warning at all.
	rep, err = newCommitter(t, e.client, committer.Options{}).Sweep(context.Background(), committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", OlderThan: 72 * time.Hour, DryRun: true})
	if err != nil || len(rep.Warnings) != 0 {
		t.Fatalf("warnings on a server without lifecycle rules: %v %v", rep.Warnings, err)
	}
}

func TestSweepUnderFaults(t *testing.T) {
	e := newEnv(t)
	fx := newSweepFixture(e, 1100*time.Millisecond)
	f := s3fault.New(e.client)
	f.On(s3fault.AbortMultipartUpload, s3fault.Nth(1, s3fault.LostResponse))
	f.On(s3fault.AbortMultipartUpload, s3fault.Nth(2, s3fault.SlowDown))
	f.On(s3fault.DeleteObjects, s3fault.Nth(1, s3fault.Timeout))
	f.On(s3fault.ListMultipartUploads, s3fault.Nth(1, s3fault.BeforeSend))
	c := newCommitter(t, f, committer.Options{SweepConcurrency: 1})
	rep, err := c.Sweep(context.Background(), committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", Cutoff: fx.cutoff, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Stale != 2 || rep.Uploads.Failed != 0 || rep.SideObjects.Removed != 2 {
		t.Fatalf("report: uploads %+v side %+v", rep.Uploads, rep.SideObjects)
	}
	// The lost reply hid one abort: the upload is gone all the same.
	if got := e.uploads(); len(got) != 2 {
		t.Fatalf("uploads left: %v", got)
	}

	// Aborts that never get through: reported, and the sweep goes on.
	e.bucket = e.srv.Bucket(t)
	fx = newSweepFixture(e, 1100*time.Millisecond)
	f = s3fault.New(e.client)
	f.On(s3fault.AbortMultipartUpload, s3fault.Always(s3fault.BeforeSend))
	c = newCommitter(t, f, committer.Options{MaxAttempts: 2, MaxRounds: 2})
	rep, err = c.Sweep(context.Background(), committer.SweepOptions{Bucket: e.bucket, Prefix: "out/", Cutoff: fx.cutoff, Force: true})
	if err == nil || rep.Uploads.Failed != 2 || rep.SideObjects.Removed != 2 {
		t.Fatalf("report: uploads %+v side %+v err %v", rep.Uploads, rep.SideObjects, err)
	}
	var re *recoverable.Error
	if !errors.As(err, &re) || re.UploadID == "" || re.Bucket != e.bucket {
		t.Fatalf("error does not name the upload: %v", err)
	}
}

// TestSweepOnlyOwnKeys is the failure-matrix row "a sweep with a prefix
// missing its slash, a staging prefix over the output, a cutoff typo": both
// prefixes are folders, only s3once's own keys go (files' uploads, side
// objects, probes, and the upload a preflight killed midway leaves under the
// staging prefix), a staging prefix over the output is refused by the
// sink's rule, and a cutoff below the floor needs Force. Ages need no wait:
// the cutoff is the server's time just after the things were made.
func TestSweepOnlyOwnKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const probeID = "20260101T000000Z-0a0b0c0d0e0f"
	ownUp := fileName("out", 1)
	ownUploads := []string{ownUp + " " + e.openUpload(ownUp, 100)}
	probe := ownkeys.PreflightCompleteKey(staging, probeID)
	ownUploads = append(ownUploads, probe+" "+e.openUpload(probe, 10))
	outProbe := ownkeys.PreflightOutputKey("out", probeID)
	ownUploads = append(ownUploads, outProbe+" "+e.openUpload(outProbe, 10))
	var foreignUploads []string
	for _, k := range []string{fileName("out-v2", 1), "out/tool-upload.bin", ".s3once/staging/another-tool.bin"} {
		foreignUploads = append(foreignUploads, k+" "+e.openUpload(k, 10))
	}
	ownObjects := []string{
		ownkeys.SideObjectKey(staging, "u1", 1, ""), ownkeys.SideObjectKey(staging, "u1", 2, "0a1b2c3d"),
		ownkeys.PreflightSideKey(staging, probeID), ownkeys.ConditionalProbeKey(staging, "0123456789abcdef"),
		ownkeys.ClockProbeKey(staging, "0123456789abcdef"),
	}
	foreignObjects := []string{
		".s3once/staging-exports/a.csv", ".s3once/stagingbackup.tar", ".s3once/staging/notes.txt",
		".s3once/staging/u1/q1.csv", "out/" + "global-pane-0-shard-00000-of-00001-file-00000.txt",
	}
	for _, k := range append(slices.Clone(ownObjects), foreignObjects...) {
		e.put(k, 5)
	}
	cutoff := e.serverTime().Add(time.Second)
	c := newCommitter(t, e.client, committer.Options{})

	// Refused before anything is touched.
	for name, so := range map[string]committer.SweepOptions{
		"staging equal to the output":   {Prefix: "out", StagingPrefix: "out/"},
		"output under staging":          {Prefix: "out/x", StagingPrefix: "out"},
		"staging where readers look":    {Prefix: "out", StagingPrefix: "out/tmp"},
		"staging over the whole bucket": {WholeBucket: true, StagingPrefix: "tmp/"},
		"a cutoff typo without Force":   {Prefix: "out", StagingPrefix: ".s3once/staging"},
	} {
		so.Bucket, so.Cutoff = e.bucket, cutoff
		if _, err := c.Sweep(ctx, so); !errors.Is(err, recoverable.ErrInvalidOptions) {
			t.Errorf("%s: %v, want ErrInvalidOptions", name, err)
		}
	}
	if _, err := c.Sweep(ctx, committer.SweepOptions{Bucket: e.bucket, Prefix: "out", OlderThan: 7 * time.Minute}); !errors.Is(err, recoverable.ErrInvalidOptions) || !strings.Contains(err.Error(), "floor") {
		t.Errorf("--older-than 7m: %v, want a refusal below the floor", err)
	}
	all := append(slices.Clone(ownUploads), foreignUploads...)
	slices.Sort(all)
	if got := e.uploads(); !slices.Equal(got, all) {
		t.Fatalf("a refused sweep changed the uploads: %v", got)
	}

	// Prefixes without their slash are folders all the same.
	so := committer.SweepOptions{Bucket: e.bucket, Prefix: "out", StagingPrefix: ".s3once/staging", Cutoff: cutoff, Force: true, DryRun: true}
	rep, err := c.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Stale != len(ownUploads) || rep.Uploads.NotOwn != 2 || rep.SideObjects.Stale != len(ownObjects) || rep.SideObjects.NotOwn != 2 {
		t.Fatalf("dry run: uploads %+v, side objects %+v", rep.Uploads, rep.SideObjects)
	}
	so.DryRun = false
	rep, err = c.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Removed != len(ownUploads) || rep.SideObjects.Removed != len(ownObjects) {
		t.Fatalf("sweep: uploads %+v, side objects %+v", rep.Uploads, rep.SideObjects)
	}
	slices.Sort(foreignUploads)
	if got := e.uploads(); !slices.Equal(got, foreignUploads) {
		t.Fatalf("uploads left %v, want exactly the foreign ones %v", got, foreignUploads)
	}
	for _, k := range foreignObjects {
		if len(e.keys(k)) != 1 {
			t.Errorf("%s was removed", k)
		}
	}
	for _, k := range ownObjects {
		if len(e.keys(k)) != 0 {
			t.Errorf("%s survived the sweep", k)
		}
	}
}

// A server whose clock is an hour off shows in the report as that skew, less
// only what the reading leaves open (the time's grain and the round trip); a
// server in step shows none.
func TestSweepReportsClockSkew(t *testing.T) {
	for _, c := range []struct {
		name   string
		offset time.Duration
	}{{"in step", 0}, {"an hour ahead", time.Hour}, {"an hour behind", -time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			fake := s3mem.New(s3mem.Options{Now: func() time.Time { return time.Now().Add(c.offset) }})
			cm := newCommitter(t, fake.NewClient(s3mem.ClientOptions{}), committer.Options{})
			rep, err := cm.Sweep(context.Background(), committer.SweepOptions{Bucket: fake.Bucket(), Prefix: "out/", OlderThan: 2 * time.Hour, Force: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			// The Date's grain and the refresh lag allowed for (2s), and a
			// minute for the round trip on the slowest machine.
			if d := rep.ClockSkew - c.offset; d > time.Minute || d < -time.Minute || (c.offset == 0 && rep.ClockSkew != 0) {
				t.Fatalf("clock skew %v reported for a server %v off", rep.ClockSkew, c.offset)
			}
		})
	}
}
