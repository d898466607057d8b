package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestSweepLeftOvers: with the documented --older-than 7d, the sweep aborts
// a young upload whose key holds an object, and deletes its side object,
// and leaves a young upload of an empty key; --keep-restorable and
// --unconditional leave both.
func TestSweepLeftOvers(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{})
	b := srv.Bucket(t)
	ctx := context.Background()
	file := func(n int) string {
		return ownkeys.FileKey("out", "", ownkeys.FileName{Window: "global", Shard: n, Shards: 4, File: 0, Ext: ".txt"})
	}
	put := func(key string) {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("bytes")}); err != nil {
			t.Fatal(err)
		}
	}
	open := func(key string) (upload, side string) {
		out, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: out.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 100))}); err != nil {
			t.Fatal(err)
		}
		side = ownkeys.SideObjectKey(recoverable.DefaultStagingPrefix, aws.ToString(out.UploadId), 1, "0a1b2c3d")
		put(side)
		return key + " " + aws.ToString(out.UploadId), side
	}
	state := func() (uploads, side []string) {
		u, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range u.Uploads {
			uploads = append(uploads, aws.ToString(x.Key)+" "+aws.ToString(x.UploadId))
		}
		o, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String(recoverable.DefaultStagingPrefix)})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range o.Contents {
			side = append(side, aws.ToString(x.Key))
		}
		slices.Sort(uploads)
		slices.Sort(side)
		return uploads, side
	}
	put(file(0)) // the committed file
	leftUpload, leftSide := open(file(0))
	keptUpload, keptSide := open(file(1))
	allUploads, allSide := state()

	env := []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}
	args := []string{"sweep", "--bucket", b, "--prefix", "out", "--older-than", "7d", "--s3-endpoint", srv.Endpoint(), "--path-style"}
	for _, flag := range []string{"--keep-restorable", "--unconditional"} {
		r := runCmd(t, "", env, append(args, flag)...)
		if r.code != exitOK || !strings.Contains(r.stdout, "aborted 0,") {
			t.Fatalf("%s: exit %d\n%s\n%s", flag, r.code, r.stdout, r.stderr)
		}
		if u, s := state(); !slices.Equal(u, allUploads) || !slices.Equal(s, allSide) {
			t.Fatalf("%s removed something: uploads %v, side objects %v", flag, u, s)
		}
	}

	r := runCmd(t, "", env, append(args, "--dry-run")...)
	if r.code != exitOK || !strings.Contains(r.stdout, "upload       "+leftUpload[:strings.IndexByte(leftUpload, ' ')]) ||
		!strings.Contains(r.stdout, "(its key holds an object)") || !strings.Contains(r.stdout, leftSide+"  ") {
		t.Fatalf("dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd(t, "", env, args...)
	if r.code != exitOK || !strings.Contains(r.stdout, "aborted 1,") || !strings.Contains(r.stdout, "1 of them younger at committed keys") {
		t.Fatalf("sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	u, s := state()
	if !slices.Equal(u, []string{keptUpload}) || !slices.Equal(s, []string{keptSide}) {
		t.Fatalf("after the sweep: uploads %v, side objects %v; want %s and %s (%s gone)", u, s, keptUpload, keptSide, leftUpload)
	}
}
