package icebergtable

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The crash loop's child runs the whole pipeline (sink.Write, then Append)
// in a process of its own, which the parent kills with SIGKILL at a random
// moment. Its settings come from the environment.
const (
	childEnv      = "S3ONCE_ICEBERG_CHILD"       // "1" in a child
	childEndpoint = "S3ONCE_ICEBERG_ENDPOINT"    // the parent's server
	childBucket   = "S3ONCE_ICEBERG_BUCKET"      // the bucket
	childCatalog  = "S3ONCE_ICEBERG_CATALOG"     // the SQLite file
	childRecords  = "S3ONCE_ICEBERG_RECORDS"     // how many events
	loopsEnv      = "S3ONCE_ICEBERG_CRASH_LOOPS" // loops of the crash test (default 3)
)

// TestChildPipeline is the crash loop's child; it does nothing in an
// ordinary run.
func TestChildPipeline(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the crash loop's child (TestCrashLoop starts it)")
	}
	n, err := strconv.Atoi(os.Getenv(childRecords))
	if err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties(crashCatalogProps(os.Getenv(childBucket), os.Getenv(childCatalog)))
	st := stageRun(t, "crash", props, "crash-run")
	cfg, bucket, prefix := st.cfg, st.bucket, st.prefix
	sinkCfg := parquetSink(bucket, prefix, 3)
	sinkCfg.CheckpointBytes = 16 << 10
	p, s := beam.NewPipelineWithRoot()
	_, windows := sink.WriteWindows(s, beam.CreateList(s, events(0, n)), sinkCfg)
	Append(s, windows, cfg)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}

func crashCatalogProps(bucket, db string) map[string]string {
	return map[string]string{
		"type": "sql", "uri": "file:" + db + "?_pragma=busy_timeout(20000)",
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse":            "s3://" + bucket + "/lake",
		"s3.endpoint":          endpoint,
		"s3.region":            s3test.Region,
		"s3.access-key-id":     s3test.AccessKey,
		"s3.secret-access-key": s3test.SecretKey,
	}
}

// TestCrashLoop kills the pipeline (sink.Write, then Append) with SIGKILL
// at random moments, one to three times, then reruns it with the same run
// id until it succeeds; the table then holds every record once, in one
// snapshot, and no data file is in two snapshots. Each loop starts from an
// empty bucket and catalog. S3ONCE_ICEBERG_CRASH_LOOPS sets the loops
// (default 3).
func TestCrashLoop(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	loops := 3
	if v := os.Getenv(loopsEnv); v != "" {
		var err error
		if loops, err = strconv.Atoi(v); err != nil || loops < 1 {
			t.Fatalf("%s=%q: want a positive count", loopsEnv, v)
		}
	}
	const records = 3000
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	run := func(bucket, db string, kill time.Duration) (killed bool, out []byte) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildPipeline$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", childEndpoint+"="+endpoint, childBucket+"="+bucket, childCatalog+"="+db, childRecords+"="+strconv.Itoa(records))
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var timer <-chan time.Time
		if kill > 0 {
			timer = time.After(kill)
		}
		select {
		case err := <-done:
			if err != nil && kill == 0 {
				t.Fatalf("the final run failed: %v\n%s", err, buf.Bytes())
			}
			return false, buf.Bytes()
		case <-timer:
			_ = cmd.Process.Kill() // our own child, by its PID
			<-done
			return true, buf.Bytes()
		}
	}
	// A reference run measures how long a run takes, so kills land
	// anywhere in one.
	began := time.Now()
	refBucket := srv.Bucket(t)
	run(refBucket, t.TempDir()+"/ref.db", 0)
	span := time.Since(began)
	kills := 0
	for i := range loops {
		bucket, db := srv.Bucket(t), fmt.Sprintf("%s/loop-%d.db", t.TempDir(), i)
		var story []string
		for range 1 + rng.IntN(3) {
			d := time.Duration(rng.Int64N(int64(span))) + time.Millisecond
			if killed, _ := run(bucket, db, d); killed {
				kills++
				story = append(story, fmt.Sprintf("killed after %v", d.Round(time.Millisecond)))
			} else {
				story = append(story, "finished before the kill")
			}
		}
		run(bucket, db, 0)
		cat, err := catalog.Load(context.Background(), "crash", iceberg.Properties(crashCatalogProps(bucket, db)))
		if err != nil {
			t.Fatal(err)
		}
		snaps := snapshots(t, cat)
		if len(snaps) != 1 || snaps[0].Summary.Properties[PropRunID] != "crash-run" {
			t.Fatalf("loop %d (%v): %d snapshots, want the run's one", i, story, len(snaps))
		}
		wantIDs(t, cat, [2]int{0, records})
		t.Logf("loop %d: %v; then a run to the end", i, story)
	}
	t.Logf("%d loops, %d kills before the end of a run", loops, kills)
}
