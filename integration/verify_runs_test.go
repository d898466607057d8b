package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// verifyReport is the part of `s3once verify --json`'s report these tests
// read.
type verifyReport struct {
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Settings struct {
		Found  bool `json:"found"`
		Shards int  `json:"shards"`
	} `json:"settings"`
	Partitions []struct {
		Destination string `json:"destination"`
		Window      string `json:"window"`
		CheckedBy   string `json:"checked_by"`
		Files       int    `json:"files"`
		Entries     int    `json:"manifest_entries"`
		Mixed       bool   `json:"mixed"`
		Problems    int    `json:"problems"`
	} `json:"partitions"`
	Problems []struct {
		Kind        string `json:"kind"`
		Destination string `json:"destination"`
		Window      string `json:"window"`
		Key         string `json:"key"`
		Message     string `json:"message"`
	} `json:"problems"`
}

// verifyJSON runs `s3once verify --json` and decodes its report; it fails
// the test unless verify exits with want.
func verifyJSON(t testing.TB, endpoint, bucket, prefix string, want int) verifyReport {
	t.Helper()
	out, code := runVerify(t, endpoint, bucket, prefix)
	if code != want {
		t.Fatalf("s3once verify s3://%s/%s exited %d, want %d:\n%s", bucket, prefix, code, want, out)
	}
	var rep verifyReport
	// On a non-zero exit runVerify appends stderr after the JSON.
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&rep); err != nil {
		t.Fatalf("s3once verify --json: %v\n%s", err, out)
	}
	if rep.ExitCode != code {
		t.Errorf("verify's report says exit code %d, the command exited %d", rep.ExitCode, code)
	}
	return rep
}

// TestVerifyMakeRunFolder: `s3once verify` passes on the folders that
// `make run`'s program (cmd/s3once-run) writes, gzip JSON Lines and
// Parquet, after a first run and after a rerun that keeps every file:
// every partition checked by its manifest, the settings marker found with
// the program's Shards (2). The program starts its own server on a data
// folder and stops it; the test then serves that folder and verifies it.
func TestVerifyMakeRunFolder(t *testing.T) {
	t.Parallel()
	bin := binary(t, "cmd/s3once-run")
	data := t.TempDir()
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	runs := []struct {
		args   []string
		prefix string
		want   string // in the output
	}{
		{[]string{"-prefix", "corpus", "-records", "3000"}, "corpus", "files committed to s3://demo/corpus/"},
		{[]string{"-prefix", "corpus", "-records", "3000"}, "corpus", "earlier"}, // "N committed earlier": kept
		{[]string{"-prefix", "corpus-parquet", "-records", "3000", "-format", "parquet"}, "corpus-parquet", "files committed to s3://demo/corpus-parquet/"},
	}
	for i, r := range runs {
		o := startChild(t, bin, env, nil, append([]string{"-data", data, "-bucket", "demo"}, r.args...)...).wait(4 * time.Minute)
		if o.Code != 0 {
			t.Fatalf("run %d (%v): %v\nstdout:\n%s\nstderr:\n%s", i, r.args, o, o.Stdout, o.Stderr)
		}
		if !strings.Contains(o.Stdout, r.want) {
			t.Errorf("run %d (%v): the output lacks %q:\n%s", i, r.args, r.want, o.Stdout)
		}
		t.Logf("run %d (%v): %v", i, r.args, o)
	}

	// The program stopped its server; serve its data folder again.
	srv := s3test.Start(t, s3test.Options{Root: data})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	for _, prefix := range []string{"corpus", "corpus-parquet"} {
		rep := verifyJSON(t, srv.Endpoint(), "demo", prefix, 0)
		if rep.Outcome != "verified" || !rep.Settings.Found || rep.Settings.Shards != 2 {
			t.Errorf("%s: outcome %q, settings marker found %v with %d shards; want verified, found, 2", prefix, rep.Outcome, rep.Settings.Found, rep.Settings.Shards)
		}
		files := 0
		for _, p := range rep.Partitions {
			files += p.Files
			if p.CheckedBy != "manifest" || p.Mixed || p.Problems != 0 || p.Files != p.Entries {
				t.Errorf("%s: partition %+v; want checked by its manifest, not mixed, every file listed", prefix, p)
			}
		}
		want := len(committedFilesUnder(s3test.Objects(t, client, "demo", prefix+"/"), prefix))
		if len(rep.Partitions) == 0 || files != want {
			t.Errorf("%s: verify saw %d partitions and %d files; the folder holds %d files", prefix, len(rep.Partitions), files, want)
		}
		t.Logf("%s: %d partitions, %d files verified", prefix, len(rep.Partitions), files)
	}
}

// committedFilesUnder returns the s3once files of the folder prefix among
// objects.
func committedFilesUnder(objects map[string][]byte, prefix string) []string {
	var files []string
	for k := range objects {
		if ownkeys.IsFileName(prefix, k) {
			files = append(files, k)
		}
	}
	return files
}

// TestVerifyAfterChangedRerunAlways: with --finalize-commit always, where
// files are committed at bundle finalization and no run-wide barrier
// looks first, a real rerun into a folder the first run completed:
//
//   - with other Shards (2, then 3): the rerun fails with
//     [s3once:settings-changed] (the writer judges the settings marker
//     before it registers any commit), commits none of its files, and the
//     folder still verifies (exit 0), no partition mixed;
//   - with the same settings and other input (twice the records, so that
//     each shard is split into sub-batches whose files have other names):
//     whatever the rerun committed stays beside the first run's files
//     ("always" is weaker, docs/guarantees.md). verify must then fail
//     (exit 1), name every partition holding the rerun's files mixed and
//     no other, and report problems only there (file-extra against a
//     manifest, shards-mixed by the listing); had the rerun committed
//     nothing, verify must pass.
func TestVerifyAfterChangedRerunAlways(t *testing.T) {
	t.Parallel()
	bin := binary(t, "pipelines/batch")
	srv := s3test.Start(t, s3test.Options{})
	client := srv.Client(s3test.ClientOptions{MaxAttempts: 3})
	env := childEnv(s3test.AccessKey, s3test.SecretKey)
	always := []string{"--finalize-commit", "always"}

	first := func(t *testing.T, extra ...string) (string, map[string][]byte) {
		t.Helper()
		bucket := srv.Bucket(t)
		o := runBatch(t, bin, env, srv.Endpoint(), bucket, faultConfig, append(always, extra...)...).wait(4 * time.Minute)
		if o.Code != 0 {
			t.Fatalf("the first run: %v\nstderr:\n%s", o, o.Stderr)
		}
		verifyJSON(t, srv.Endpoint(), bucket, outPrefix, 0)
		return bucket, s3test.Objects(t, client, bucket, outPrefix+"/")
	}

	t.Run("other-shards", func(t *testing.T) {
		bucket, was := first(t)
		o := runBatch(t, bin, env, srv.Endpoint(), bucket, faultConfig, append(always, "--shards", "3", "--skip-preflight")...).wait(4 * time.Minute)
		if o.Code != 1 || !hasCode(o.Stderr+o.Stdout, errcode.SettingsChanged) {
			t.Errorf("the rerun with --shards 3: %v, want exit 1 with %s\nstderr:\n%s", o, errcode.SettingsChanged.Token(), o.Stderr)
		}
		now := s3test.Objects(t, client, bucket, outPrefix+"/")
		var committed []string
		for _, k := range committedFiles(now) {
			if _, ok := was[k]; !ok {
				committed = append(committed, k)
			}
		}
		if len(committed) > 0 {
			t.Errorf("the refused rerun committed %d files of its own: %v", len(committed), committed)
			rep := verifyJSON(t, srv.Endpoint(), bucket, outPrefix, 1)
			t.Logf("verify of the folder it left: %+v", rep.Partitions)
			return
		}
		sameObjects(t, now, was)
		rep := verifyJSON(t, srv.Endpoint(), bucket, outPrefix, 0)
		for _, p := range rep.Partitions {
			if p.Mixed || p.Problems != 0 {
				t.Errorf("partition %+v after a refused rerun", p)
			}
		}
		t.Logf("the rerun with --shards 3 was refused (%v) and committed nothing; verify passes on %d partitions", o, len(rep.Partitions))
	})

	t.Run("other-input", func(t *testing.T) {
		// 6000 records make about 750 KiB per shard and topic: one batch
		// under a 1 MiB bound; 12000 split every shard into sub-batches,
		// whose files have names the first run's do not.
		bound := []string{"--max-batch-bytes", "1048576"}
		bucket, was := first(t, bound...)
		for _, k := range committedFiles(was) {
			if strings.Contains(k, "-batch-") {
				t.Fatalf("the first run split a shard (%s): the test's sizes no longer fit the corpus", k)
			}
		}
		manifests := 0
		for _, k := range s3test.Keys(t, client, bucket, outPrefix+"/") {
			if ownkeys.IsManifest(outPrefix, k) {
				manifests++
			}
		}
		// Bounded input in the global window gets its manifests once the
		// run is committed, in this mode too.
		if manifests == 0 {
			t.Errorf("the first run wrote no partition manifest")
		}
		o := runBatch(t, bin, env, srv.Endpoint(), bucket, faultConfig, append(append(always, bound...), "--records", "12000")...).wait(4 * time.Minute)
		if o.TimedOut {
			t.Fatalf("the rerun with other input: %v\nstderr:\n%s", o, o.Stderr)
		}
		// Its files do not match the complete partitions' manifests: the
		// run fails.
		if o.Code == 0 {
			t.Errorf("the rerun with other input into complete partitions succeeded")
		}
		// What the failed run left open is the sweep's, as after any failed
		// run; verify then judges the files alone.
		sweepAndCheckClean(t, client, bucket, outPrefix+"/")
		now := s3test.Objects(t, client, bucket, outPrefix+"/")
		for k, b := range was {
			if !bytes.Equal(now[k], b) {
				t.Errorf("the rerun changed or removed the first run's %s", k)
			}
		}
		foreign := map[string]bool{} // partitions holding files of the rerun
		var extra []string
		for _, k := range committedFiles(now) {
			if _, ok := was[k]; ok {
				continue
			}
			extra = append(extra, k)
			dest, window, ok := ownkeys.ParseFileKey(outPrefix, k)
			if !ok {
				t.Fatalf("cannot parse the file key %s", k)
			}
			foreign[dest+" "+window] = true
		}
		if len(extra) == 0 {
			rep := verifyJSON(t, srv.Endpoint(), bucket, outPrefix, 0)
			t.Logf("the rerun (%v) committed none of its files; verify passes on %d partitions (no mixed partition to name)", o, len(rep.Partitions))
			return
		}
		rep := verifyJSON(t, srv.Endpoint(), bucket, outPrefix, 1)
		problems := map[string]int{} // by partition
		for _, pr := range rep.Problems {
			problems[pr.Destination+" "+pr.Window]++
			if !foreign[pr.Destination+" "+pr.Window] || (pr.Kind != "file-extra" && pr.Kind != "shards-mixed") {
				t.Errorf("verify reports %s %s in partition %s %s, which holds no file of the rerun: %s", pr.Kind, pr.Key, pr.Destination, pr.Window, pr.Message)
			}
		}
		for _, p := range rep.Partitions {
			pt := p.Destination + " " + p.Window
			if p.Mixed != foreign[pt] || (foreign[pt] && problems[pt] == 0) {
				t.Errorf("partition %s reported mixed=%v with %d problems; it holds files of the rerun: %v", pt, p.Mixed, problems[pt], foreign[pt])
			}
		}
		kinds := map[string]int{}
		for _, pr := range rep.Problems {
			kinds[pr.Kind]++
		}
		t.Logf("the first run wrote %d partition manifests; the rerun with other input (%v) committed %d files of its own beside the first run's, in %d partitions; verify exits 1 naming them mixed (%v)",
			manifests, o, len(extra), len(foreign), kinds)
	})
}
