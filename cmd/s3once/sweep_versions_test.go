package main

import (
	"context"
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

// sweep --versioned on a versioned bucket (MinIO) removes the old versions
// and delete markers of s3once's staging keys and keeps another tool's;
// without --versioned it leaves them. --expected-bucket-owner naming
// another account makes the sweep fail before it removes anything
// (versitygw refuses such calls as S3 does).
func TestSweepVersionedAndOwner(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	c := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	b := srv.Bucket(t)
	ctx := context.Background()
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	own := ownkeys.SideObjectKey(recoverable.DefaultStagingPrefix, "up", 1, "0a1b2c3d")
	foreign := recoverable.DefaultStagingPrefix + "notes.txt"
	for _, k := range []string{own, foreign} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	versions := func(key string) int {
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &b, Prefix: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Versions) + len(out.DeleteMarkers)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	args := []string{"sweep", "--bucket", b, "--prefix", "out", "--older-than", "7d", "--s3-endpoint", srv.Endpoint(), "--path-style"}
	if r := runCmd(t, "", env, args...); r.code != exitOK || versions(own) != 2 {
		t.Fatalf("without --versioned: exit %d, %d versions of the own key left (want 2)\n%s", r.code, versions(own), r.stderr)
	}
	r := runCmd(t, "", env, append(args, "--versioned")...)
	if r.code != exitOK || !strings.Contains(r.stdout, "old versions") {
		t.Fatalf("--versioned: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := versions(own); n != 0 {
		t.Errorf("%d versions of s3once's key left", n)
	}
	if n := versions(foreign); n != 2 {
		t.Errorf("another tool's key has %d versions, had 2", n)
	}

	vg := s3test.Start(t, s3test.Options{})
	vb := vg.Bucket(t)
	args = []string{"sweep", "--bucket", vb, "--prefix", "out", "--older-than", "7d", "--s3-endpoint", vg.Endpoint(), "--path-style"}
	if r := runCmd(t, "", env, append(args, "--expected-bucket-owner", "444455556666")...); r.code == exitOK || !strings.Contains(r.stderr, "AccessDenied") {
		t.Errorf("another owner: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCmd(t, "", env, append(args, "--expected-bucket-owner", s3test.AccessKey)...); r.code != exitOK {
		t.Errorf("the right owner: exit %d\n%s", r.code, r.stderr)
	}
}

// The JSON report carries the old versions' counts, as the text does.
func TestSweepJSONCountsOldVersions(t *testing.T) {
	rep := committer.SweepReport{DryRun: true, Versions: committer.SweepCounts{Scanned: 3, Stale: 3, Bytes: 42}}
	items := &staleItems{limit: 10}
	items.add(committer.SweepItem{Kind: "old version", Key: "k", VersionID: "v2"})
	items.add(committer.SweepItem{Kind: "old version", Key: "k", VersionID: "v1", Bytes: 42})
	j := sweepJSON(rep, time.Hour, items)
	if j.OldVersions.Scanned != 3 || j.OldVersions.Stale != 3 || j.OldVersions.Bytes != 42 {
		t.Errorf("old_versions %+v, want 3 scanned and stale, 42 bytes", j.OldVersions)
	}
	if len(j.Items) != 2 || j.Items[0].VersionID != "v1" || j.Items[1].VersionID != "v2" || j.Items[0].Time != nil {
		t.Errorf("items %+v, want v1 then v2, without times", j.Items)
	}
}
