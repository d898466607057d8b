package sink

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// openLeftover opens an upload at key with one part, as a killed attempt
// leaves it, and a side object of it under the default staging prefix. It
// returns the upload's ID and the side object's key.
func openLeftover(t *testing.T, c *s3.Client, bucket, key string) (id, side string) {
	t.Helper()
	ctx := context.Background()
	out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	id = aws.ToString(out.UploadId)
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: out.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("a killed attempt's part\n"))}); err != nil {
		t.Fatal(err)
	}
	side = ownkeys.SideObjectKey(recoverable.DefaultStagingPrefix, id, 1, "k")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(side), Body: strings.NewReader("tail")}); err != nil {
		t.Fatal(err)
	}
	return id, side
}

// openUploads lists the bucket's open uploads as "key upload", sorted.
func openUploads(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var us []string
	for _, u := range out.Uploads {
		us = append(us, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	slices.Sort(us)
	return us
}

// TestLeftoverUploadsAborted: uploads that a killed attempt left open at the
// keys of files the run then commits (opened before the run, with a side
// object each) are aborted by the manifest stage, and their side objects
// deleted, with no sweep: the folder is clean after the run. An upload at a
// file key of the same partition that the run does not commit stays, with
// its side object.
func TestLeftoverUploadsAborted(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(2000, 31)
	if _, err := partitionRun(t, bucket, "ref", in, nil); err != nil {
		t.Fatal(err)
	}
	ref := relative(t, c, bucket, "ref")
	var files []string
	for _, k := range slices.Sorted(maps.Keys(ref)) {
		if ownkeys.IsFileName("", k) {
			files = append(files, k)
		}
	}
	dests := map[string]bool{}
	for _, k := range files {
		dests[k[:strings.IndexByte(k, '/')]] = true
	}
	if len(files) < 4 || len(dests) < 2 {
		t.Fatalf("the reference run wrote %d files in %d partitions; the test needs more", len(files), len(dests))
	}
	// A left-over at every other file key (in several partitions), two at
	// the first.
	var leftovers []string
	for i, k := range files {
		if i%2 == 0 {
			id, _ := openLeftover(t, c, bucket, "out/"+k)
			leftovers = append(leftovers, id)
		}
	}
	id, _ := openLeftover(t, c, bucket, "out/"+files[0])
	leftovers = append(leftovers, id)
	// The same partition's file 99, which the run does not write.
	at := strings.LastIndex(files[0], "-file-") + len("-file-")
	stray := "out/" + files[0][:at] + "00099" + files[0][at+5:]
	if !ownkeys.IsFileName("out", stray) {
		t.Fatalf("%s is not a file name", stray)
	}
	strayID, straySide := openLeftover(t, c, bucket, stray)

	counts, err := partitionRun(t, bucket, "out", in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(ref, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Error("the run's files differ from the reference run's")
	}
	if got, want := openUploads(t, c, bucket), []string{stray + " " + strayID}; !slices.Equal(got, want) {
		t.Errorf("uploads after the run: %v, want only %v", got, want)
	}
	if got := s3test.Keys(t, c, bucket, recoverable.DefaultStagingPrefix); !slices.Equal(got, []string{straySide}) {
		t.Errorf("side objects after the run: %v, want only %s", got, straySide)
	}
	if n := counts["leftover_uploads_aborted"]; n != int64(len(leftovers)) {
		t.Errorf("leftover_uploads_aborted = %d, want %d", n, len(leftovers))
	}
}
