package integration

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// windowKey matches a file of the streaming example and captures its window.
var windowKey = regexp.MustCompile(`^events/kind=[a-z]+/(\d{8}T\d{6}(?:\.\d{3})?Z-\d{8}T\d{6}(?:\.\d{3})?Z)-pane-\d+-shard-\d{5}-of-\d{5}-file-\d{5}\.jsonl\.gz$`)

// The streaming example writes files per window (and per event kind); a
// second run of the generated events writes the same files, byte for byte.
// Live, from an unbounded source, windows close and their files are
// committed while it runs.
func TestStreamingExample(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/streaming")
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)

	t.Run("generated", func(t *testing.T) {
		bucket := srv.Bucket(t)
		args := []string{"--bucket", bucket, "--s3-endpoint", srv.Endpoint(), "--records", "8000", "--span", "30m", "--window", "10m",
			"--checkpoint-bytes", "65536", "--timeout", "3m"}
		first := startChild(t, bin, env, nil, args...).wait(4 * time.Minute)
		if first.Code != 0 {
			t.Fatalf("first run: %v\n%s", first, first.Stderr)
		}
		want := s3test.Objects(t, client, bucket, "events/")
		windows := map[string]bool{}
		for k := range want {
			m := windowKey.FindStringSubmatch(k)
			if m == nil {
				t.Fatalf("unexpected key %s", k)
			}
			windows[m[1]] = true
		}
		if len(windows) != 3 {
			t.Errorf("files in %d windows, want 3 (30m of events in 10m windows): %v", len(windows), windows)
		}
		second := startChild(t, bin, env, nil, args...).wait(4 * time.Minute)
		if second.Code != 0 {
			t.Fatalf("second run: %v\n%s", second, second.Stderr)
		}
		sameObjects(t, s3test.Objects(t, client, bucket, "events/"), want)
		sweepAndCheckClean(t, client, bucket, "events/")
		t.Logf("%d files in %d windows; runs %v and %v", len(want), len(windows), first, second)
	})

	t.Run("live", func(t *testing.T) {
		bucket := srv.Bucket(t)
		o := startChild(t, bin, env, nil, "--bucket", bucket, "--s3-endpoint", srv.Endpoint(),
			"--live", "5s", "--window", "2s", "--tick", "250ms", "--per-tick", "50", "--timeout", "3m").wait(4 * time.Minute)
		if o.Code != 0 {
			t.Fatalf("live run: %v\n%s", o, o.Stderr)
		}
		windows := map[string]bool{}
		partitions := map[string][]string{} // manifest key -> the partition's files
		manifests := map[string]bool{}
		for _, k := range s3test.Keys(t, client, bucket, "events/") {
			if ownkeys.IsSettingsAnywhere(k) {
				continue // the folder's settings marker
			}
			if ownkeys.IsManifestAnywhere(k) {
				manifests[k] = true
				continue
			}
			m := windowKey.FindStringSubmatch(k)
			if m == nil {
				t.Fatalf("unexpected key %s", k)
			}
			windows[m[1]] = true
			dest, w, ok := ownkeys.ParseFileKey("events", k)
			if !ok {
				t.Fatalf("%s is not a file name", k)
			}
			mk := ownkeys.ManifestKey("events", dest, w)
			partitions[mk] = append(partitions[mk], k)
		}
		if len(windows) < 2 {
			t.Errorf("files in %d windows, want at least 2 from 5s of events in 2s windows", len(windows))
		}
		// Every window expired by the end of the run: each partition has
		// its manifest, listing exactly its files.
		for mk, files := range partitions {
			if !manifests[mk] {
				t.Errorf("no manifest %s for %d files", mk, len(files))
				continue
			}
			entries, err := manifest.Decode(s3test.Object(t, client, bucket, mk))
			if err != nil {
				t.Fatalf("%s: %v", mk, err)
			}
			var listed []string
			for _, e := range entries {
				listed = append(listed, e.Key)
			}
			slices.Sort(files)
			if !slices.Equal(listed, files) {
				t.Errorf("%s lists %v; the partition holds %v", mk, listed, files)
			}
		}
		if len(manifests) != len(partitions) {
			t.Errorf("%d manifests for %d partitions", len(manifests), len(partitions))
		}
		sweepAndCheckClean(t, client, bucket, "events/")
		t.Logf("live: %d windows; run %v", len(windows), o)
	})
}
