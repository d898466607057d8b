package icebergtable

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// TestFaultMatrixPipeline is the matrix's share through the public
// pipeline path: icebergtable.Write on the embedded runner, the table
// stage's catalog faulted where the worker loads it (each in-process fault
// kind, at a seed of its own), the same run id run again after every
// failed run, as an operator's retry does, until one succeeds. Then the
// table must hold the run once: checkFaultTable against the Parquet files
// the run's folder holds, their record counts read from their own footers.
func TestFaultMatrixPipeline(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		t.Skip("in the child")
	}
	bucket := srv.Bucket(t)
	client := s3test.NewClient(endpoint, s3test.ClientOptions{})
	n := 0
	for _, kind := range faultKinds {
		if kind == faultKill {
			continue // TestFaultMatrixKill
		}
		t.Run(kind.String(), func(t *testing.T) {
			// A plan places its faults among the catalog calls, and a
			// pipeline makes few: the next seed is tried until one fires,
			// so that every kind is injected at least once.
			for seed := uint64(1); seed <= 12; seed++ {
				n++
				if pipelineFaultLoop(t, client, bucket, n, seed, kind) > 0 {
					return
				}
			}
			t.Errorf("no seed of 1 to 12 injected a %v fault: the check tests nothing for it", kind)
		})
	}
}

// pipelineFaultLoop runs one loop of TestFaultMatrixPipeline on a table of
// its own and returns how many faults of its kind it injected.
func pipelineFaultLoop(t *testing.T, client *s3.Client, bucket string, n int, seed uint64, kind faultKind) int {
	t.Helper()
	recs := events(0, 90)
	props := sqliteDefaults(catalogProps(t, bucket))
	props["warehouse"] = fmt.Sprintf("s3://%s/pipeline-%d", bucket, n)
	st := newFaultState(newFaultPlan(seed, kind, 40, 0.3))
	id := fmt.Sprintf("%s/%d", t.Name(), n)
	defer registerFaultState(id, st)()
	public, fromEnv := inGraph(props)
	public["type"], public[faultPlanProp] = faultCatalogType, id
	cfg := Config{CatalogName: "pipeline", CatalogProperties: public, CatalogSecretsEnv: fromEnv,
		Table: "lake.events", RunID: "run-1", Sink: testSink()}
	st.arm()
	var err error
	runs := 0
	for runs < 30 {
		runs++
		p, s := beam.NewPipelineWithRoot()
		if _, err = TryWrite(s, beam.CreateList(s, recs), cfg); err != nil {
			continue // the catalog, faulted while the pipeline is built
		}
		if err = ptest.Run(p); err == nil {
			break
		}
		if strings.Contains(err.Error(), ErrRunChanged.Error()) {
			t.Fatalf("seed %d, run %d: a retry of the same input was refused as changed: %v", seed, runs, err)
		}
	}
	if err != nil {
		t.Fatalf("seed %d: %d runs failed, the last: %v", seed, runs, err)
	}
	plain, err := catalog.Load(context.Background(), cfg.CatalogName, iceberg.Properties(props))
	if err != nil {
		t.Fatal(err)
	}
	want := runFolderFiles(t, client, plain, "run-1")
	rep, err := checkFaultTable(context.Background(), client, plain, []wantRun{want})
	if err != nil {
		t.Fatalf("seed %d (%d runs, faults injected %v): %v", seed, runs, st.counts(), err)
	}
	if rep.records != int64(len(recs)) {
		t.Errorf("seed %d: the table holds %d records, the input %d", seed, rep.records, len(recs))
	}
	t.Logf("seed %d: %d runs, faults injected %v; %d snapshots, %d data files", seed, runs, st.counts(), rep.snapshots, rep.dataFiles)
	return st.counts()[kind]
}

// runFolderFiles lists the Parquet files of a run's folder and reads each
// one's record count from its footer.
func runFolderFiles(t *testing.T, c *s3.Client, cat catalog.Catalog, runID string) wantRun {
	t.Helper()
	ctx := context.Background()
	loaded, err := cat.LoadTable(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	bucket, path, err := splitS3(loaded.Location())
	if err != nil {
		t.Fatal(err)
	}
	_, prefix, err := (&Table{bucket: bucket, path: path}).RunFolder(runID)
	if err != nil {
		t.Fatal(err)
	}
	w := wantRun{id: runID, files: map[string]int64{}}
	for _, key := range s3test.Keys(t, c, bucket, prefix+"/") {
		if !strings.HasSuffix(key, ".parquet") {
			continue
		}
		body := s3test.Object(t, c, bucket, key)
		f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		w.files[key] = f.NumRows()
	}
	if len(w.files) == 0 {
		t.Fatalf("the run's folder s3://%s/%s holds no Parquet file", bucket, prefix)
	}
	return w
}
