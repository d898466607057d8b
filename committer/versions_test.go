package committer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// versionedBucket starts MinIO (which keeps versions) and returns a client
// and a bucket with versioning enabled.
func versionedBucket(t *testing.T) (*s3test.Server, *s3.Client, string) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	c := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	bucket := srv.Bucket(t)
	_, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		t.Fatalf("enable versioning: %v", err)
	}
	return srv, c, bucket
}

// versions lists every version and delete marker under prefix, as
// "key#v" and "key#marker" lines.
func versions(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var out []string
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list versions: %v", err)
		}
		for _, v := range page.Versions {
			out = append(out, aws.ToString(v.Key)+"#v")
		}
		for _, m := range page.DeleteMarkers {
			out = append(out, aws.ToString(m.Key)+"#marker")
		}
	}
	sort.Strings(out)
	return out
}

// persistTwice writes a file with two side objects and returns its commit
// token.
func persistTwice(t *testing.T, c *s3.Client, bucket, key string) recoverable.CommitToken {
	t.Helper()
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Dispose(ctx)
	b := make([]byte, 3000)
	for range 2 {
		_, _ = rand.Read(b)
		if _, err := st.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Persist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cr, err := st.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

// TestCommitRemovesOldVersionsOfSideObjects: on a versioned bucket, the
// clean-up after a commit leaves no version and no delete marker of the
// file's side objects with Options.Versioned; without it, it leaves both (as
// it did before the option existed), which is what the option is for. The
// versions of another tool's key under the staging prefix are never touched.
func TestCommitRemovesOldVersionsOfSideObjects(t *testing.T) {
	_, c, bucket := versionedBucket(t)
	ctx := context.Background()
	staging := recoverable.DefaultStagingPrefix
	// Another tool's object under the staging prefix, overwritten once and
	// then deleted: two versions and a delete marker that are not s3once's.
	foreign := staging + "other-tool/notes.txt"
	for _, body := range []string{"one", "two"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(foreign), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(foreign)}); err != nil {
		t.Fatal(err)
	}
	foreignVersions := versions(t, c, bucket, staging+"other-tool/")

	for _, tc := range []struct {
		versioned bool
		wantLeft  bool
	}{{false, true}, {true, false}} {
		cm, err := committer.New(c, committer.Options{StagingPrefix: staging, Versioned: tc.versioned})
		if err != nil {
			t.Fatal(err)
		}
		key := "out/global-pane-0-shard-00000-of-00001-file-0000" + map[bool]string{false: "0", true: "1"}[tc.versioned] + ".txt"
		cr := persistTwice(t, c, bucket, key)
		folder := ownkeys.SideObjectPrefix(staging, cr.UploadID)
		if got := versions(t, c, bucket, folder); len(got) != 2 {
			t.Fatalf("before the commit: %v, want two side objects", got)
		}
		if _, err := cm.Commit(ctx, cr); err != nil {
			t.Fatalf("commit: %v", err)
		}
		left := versions(t, c, bucket, folder)
		if tc.wantLeft && len(left) == 0 {
			t.Errorf("Versioned=false: no old version left; the test cannot see what the option removes")
		}
		if !tc.wantLeft && len(left) > 0 {
			t.Errorf("Versioned=true: left %v", left)
		}
	}
	if got := versions(t, c, bucket, staging+"other-tool/"); strings.Join(got, ",") != strings.Join(foreignVersions, ",") {
		t.Errorf("another tool's versions changed: %v, were %v", got, foreignVersions)
	}
}

// TestSweepRemovesOldVersionsOfOwnKeysOnly: the sweep of a versioned bucket
// removes the noncurrent versions and delete markers of s3once's side
// objects and probes, and nothing else: a live side object stays current,
// another tool's versions and the output's stay, a dry run only counts.
func TestSweepRemovesOldVersionsOfOwnKeysOnly(t *testing.T) {
	_, c, bucket := versionedBucket(t)
	ctx := context.Background()
	staging := recoverable.DefaultStagingPrefix
	put := func(key, body string) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(key string) {
		t.Helper()
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	deadSide := ownkeys.SideObjectKey(staging, "upload-a", 1, "n1")
	liveSide := ownkeys.SideObjectKey(staging, "upload-b", 1, "n2")
	probe := ownkeys.ConditionalProbeKey(staging, "0123abcd")
	foreign := staging + "notes.txt"
	output := "out/global-pane-0-shard-00000-of-00001-file-00000.txt"
	for _, k := range []string{deadSide, liveSide, probe, foreign, output} {
		put(k, "v1")
	}
	for _, k := range []string{deadSide, probe, foreign, output} {
		del(k)
	}
	before := versions(t, c, bucket, "")

	cm, err := committer.New(c, committer.Options{StagingPrefix: staging, Versioned: true})
	if err != nil {
		t.Fatal(err)
	}
	so := committer.SweepOptions{Bucket: bucket, Prefix: "out", StagingPrefix: staging, OlderThan: 7 * 24 * time.Hour, DryRun: true}
	rep, err := cm.Sweep(ctx, so)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if rep.Versions.Stale != 4 || rep.Versions.Removed != 0 {
		t.Errorf("dry run counts %+v, want 4 stale (two versions, two markers), none removed", rep.Versions)
	}
	if got := versions(t, c, bucket, ""); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("a dry run changed versions: %v, were %v", got, before)
	}
	so.DryRun = false
	rep, err = cm.Sweep(ctx, so)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if rep.Versions.Removed != 4 {
		t.Errorf("removed %+v, want 4", rep.Versions)
	}
	want := []string{foreign + "#marker", foreign + "#v", liveSide + "#v", output + "#marker", output + "#v"}
	sort.Strings(want)
	if got := versions(t, c, bucket, ""); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("after the sweep: %v\nwant %v", got, want)
	}
}
