package committer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/settingsmarker"
)

// markerNaming is a settings marker whose files are named with ext.
func markerNaming(ext string) []byte {
	return settingsmarker.Encode(settingsmarker.Settings{
		{Name: "file-names", Value: "<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF>" + ext},
		{Name: "output-version", Value: "2"},
	})
}

func (e *env) putBody(key string, body []byte) {
	e.t.Helper()
	_, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &e.bucket, Key: &key, Body: bytes.NewReader(body)})
	if err != nil {
		e.t.Fatal(err)
	}
}

// allUploads lists the open uploads, every page, as "key upload" strings,
// sorted.
func (e *env) allUploads() []string {
	e.t.Helper()
	var us []string
	pages := s3.NewListMultipartUploadsPaginator(e.client, &s3.ListMultipartUploadsInput{Bucket: &e.bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, u := range page.Uploads {
			us = append(us, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
		}
	}
	slices.Sort(us)
	return us
}

// A user's upload named like the sink's files but ending otherwise
// ("...-file-00099.jsonl.gz.other", or another format's extension) is not
// taken for the sink's where the folder's settings marker names the files'
// extension: the sweep leaves it and counts it as another's.
func TestSweepLeavesForeignUploadsNamedLikeFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	name := func(file int, ext string) string {
		return ownkeys.FileKey("out", "day=1", ownkeys.FileName{Window: "global", Shard: 0, Shards: 1, File: file, Ext: ext})
	}
	e.putBody(ownkeys.SettingsKey("out"), markerNaming(".jsonl.gz"))
	own := []string{name(1, ".jsonl.gz"), name(2, ".jsonl.gz")}
	foreign := []string{name(99, ".jsonl.gz.other"), name(98, ".parquet"), name(97, ".jsonl")}
	var ownUploads, foreignUploads []string
	for _, k := range own {
		ownUploads = append(ownUploads, k+" "+e.openUpload(k, 10))
	}
	for _, k := range foreign {
		foreignUploads = append(foreignUploads, k+" "+e.openUpload(k, 10))
	}
	cutoff := e.serverTime().Add(time.Second)
	c := newCommitter(t, e.client, committer.Options{})
	so := committer.SweepOptions{Bucket: e.bucket, Prefix: "out", Cutoff: cutoff, Force: true}
	rep, err := c.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Removed != len(own) || rep.Uploads.NotOwn != len(foreign) {
		t.Errorf("uploads %+v: want %d removed, %d not the sink's", rep.Uploads, len(own), len(foreign))
	}
	slices.Sort(foreignUploads)
	if got := e.allUploads(); !slices.Equal(got, foreignUploads) {
		t.Errorf("uploads left %v, want exactly the foreign ones %v", got, foreignUploads)
	}
}

// A folder without a settings marker (an earlier release's, or a first run
// stopped before writing it) is swept by the file-name shape alone; a
// marker that does not decode stops the sweep before it removes anything.
func TestSweepWithoutOrWithBadMarker(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	k := ownkeys.FileKey("out", "", ownkeys.FileName{Window: "global", Shard: 0, Shards: 1, File: 1, Ext: ".jsonl.gz"})
	up := k + " " + e.openUpload(k, 10)
	c := newCommitter(t, e.client, committer.Options{})
	so := committer.SweepOptions{Bucket: e.bucket, Prefix: "out", Cutoff: e.serverTime().Add(time.Second), Force: true}

	e.putBody(ownkeys.SettingsKey("out"), []byte("not a marker\n"))
	_, err := c.Sweep(ctx, so)
	if err == nil || !strings.Contains(err.Error(), ownkeys.SettingsKey("out")) || !strings.Contains(err.Error(), "does not decode") {
		t.Errorf("a sweep beside a damaged marker: %v, want an error naming the marker", err)
	}
	if got := e.uploads(); !slices.Equal(got, []string{up}) {
		t.Fatalf("a refused sweep changed the uploads: %v", got)
	}

	if _, err := e.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &e.bucket, Key: aws.String(ownkeys.SettingsKey("out"))}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Sweep(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Uploads.Removed != 1 || len(e.uploads()) != 0 {
		t.Errorf("without a marker: uploads %+v, left %v; want the sink's upload removed", rep.Uploads, e.uploads())
	}
}
