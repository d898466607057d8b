package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/localserver"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/sink"
)

// The progress line counts the folder's s3once files, not its settings
// marker, partition manifests or completion markers (it said "committed:
// 12 files" for a folder of 8 files and 4 manifests); the summary's check
// holds the run's files to its manifests and fails where they differ.
func TestProgressAndSummaryCountFilesOnly(t *testing.T) {
	srv, err := localserver.Launch(localserver.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := srv.Client(localserver.ClientOptions{MaxAttempts: 3})
	ctx := context.Background()
	if err := ensureBucket(ctx, c, "demo"); err != nil {
		t.Fatal(err)
	}
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("demo"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var rs []sink.FileResult
	var entries []manifest.Entry
	for _, topic := range []string{"topic=a", "topic=b"} {
		var es []manifest.Entry
		for shard := range 2 {
			key := ownkeys.FileKey("corpus", topic, ownkeys.FileName{Window: "global", Shard: shard, Shards: 2, SubBatches: 1, Ext: ".jsonl.gz"})
			put(key, []byte("bytes"))
			rs = append(rs, sink.FileResult{Bucket: "demo", Key: key, Bytes: 5, Records: 1, Window: "global", Destination: topic})
			es = append(es, manifest.Entry{Key: key, Size: 5, Records: 1})
		}
		b, err := manifest.Encode(es)
		if err != nil {
			t.Fatal(err)
		}
		put(ownkeys.ManifestKey("corpus", topic, "global"), b)
		entries = append(entries, es...)
	}
	put(ownkeys.SettingsKey("corpus"), []byte("{}"))
	put(ownkeys.MarkerKey("corpus", "global", 0), []byte("{}"))

	if got := snapshot(ctx, c, "demo", "corpus"); !strings.Contains(got, "committed: 4 files, 20 B") {
		t.Errorf("the progress line says %q, want 4 files of 20 B", got)
	}
	var out strings.Builder
	if err := checkFolder(ctx, &out, c, "demo", "corpus", rs); err != nil {
		t.Fatalf("checkFolder: %v", err)
	}
	if want := "the folder agrees: its 2 partition manifests list these 4 files\n"; out.String() != want {
		t.Errorf("checkFolder printed %q, want %q", out.String(), want)
	}
	// A run that reported a file its manifests do not list disagrees.
	if err := checkFolder(ctx, &out, c, "demo", "corpus", rs[:3]); err == nil || !strings.Contains(err.Error(), "the run reported 3 files, its 2 partition manifests list 4") {
		t.Errorf("checkFolder of 3 of 4 files: %v", err)
	}
}

// A rerun's summary agrees with the folder: the run-wide barrier's count
// of the run's files, all of them kept, and the manifests' count, the
// same number of files as the folder holds.
func TestRerunSummaryAgreesWithTheFolder(t *testing.T) {
	data := t.TempDir()
	for n := 1; n <= 2; n++ {
		var out, errOut strings.Builder
		if code := run(options{data: data, bucket: "demo", prefix: "corpus", records: 3000, seed: 1}, &out, &errOut); code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", n, code, out.String(), errOut.String())
		}
		files, err := filepath.Glob(filepath.Join(data, "demo", "corpus", "topic=*", "*.jsonl.gz"))
		if err != nil || len(files) == 0 {
			t.Fatalf("run %d: no files under the data folder (%v)", n, err)
		}
		held := len(files)
		want := []string{
			fmt.Sprintf("s3once batch: %d files committed to s3://demo/corpus/", held),
			fmt.Sprintf("files of this run, checked by the run-wide barrier %d\n", held),
			fmt.Sprintf("partition manifests list these %d files\n", held),
		}
		if n == 2 {
			want[1] = fmt.Sprintf("files of this run, checked by the run-wide barrier %d · %d kept from an earlier run\n", held, held)
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("run %d: the output lacks %q; the folder holds %d files:\n%s", n, w, held, out.String())
			}
		}
	}
}
