package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// The budget test's pipeline: 16 shards of 14 MiB each, more ready
// shards than a 64 MiB budget holds at once (each batch needs twice its
// bytes at the Batch stage, and its bytes with a file's part buffers at the
// writer).
const (
	budgetRecords  = 224 << 10
	budgetLen      = 1023 // and a newline: 112 MiB in all
	budgetShards   = 16
	budgetBatch    = 16 << 20
	budgetPartSize = 5 << 20
	budgetLimit    = 64 << 20
	childBudget    = "S3ONCE_BENCH_BUDGET"
	childPrefix    = "S3ONCE_BENCH_PREFIX"
)

// budgetResult is what a budget child reports: the peak of the heap that
// the sink itself held (sink-held in the scale benchmark: what s3once's
// code allocated, less the elements it made for the runner), the bytes of
// the files it wrote (counted by the parent), and how long the pipeline
// took.
type budgetResult struct {
	Held    int64
	Bytes   int64
	Elapsed time.Duration
}

// TestWorkerMemoryBudget: 16 ready shards on prism against a 64 MiB
// MaxWorkerMemory. The run finishes with every byte written, and the peak
// of what the sink held (batches, part buffers, encoders: the heap its own
// code allocated, from the heap profile) stays under the budget, give or
// take one batch that the SDK decoded for the writer before the writer
// could reserve for it (seen: 50 and 65 MiB). A control
// run of the same pipeline with a budget of 1 GiB holds more than 64 MiB,
// so the measure would show a budget that does not hold. Each run is a
// child process of its own: the budget is the process's.
func TestWorkerMemoryBudget(t *testing.T) {
	if os.Getenv("S3ONCE_WORKER_BUDGET_TEST") == "" {
		// Its heap figures follow how many writer bundles prism hands the
		// worker at once, which a loaded machine changes: the run without
		// a budget held from 62 to 88 MiB, so neither bound holds with a
		// margin in every run. make soak runs it.
		t.Skip("writes 224 MiB through prism twice and compares heap peaks that vary with load: set S3ONCE_WORKER_BUDGET_TEST=1 (make soak does)")
	}
	e := newEnv(t)
	run := func(budget int64) budgetResult {
		prefix := fmt.Sprintf("budget/%d", budget)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			childEnv+"=budget",
			childEndpoint+"="+e.srv.Endpoint(),
			childBucket+"="+e.bucket,
			childPrefix+"="+prefix,
			childBudget+"="+strconv.FormatInt(budget, 10),
			// The heap profile counts an object until the collection after
			// it died: a low GOGC keeps the garbage in it small.
			"GOGC=20",
		)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("budget %d MiB: child: %v\n%s\n%s", budget>>20, err, out, lastLines(stderr.String(), 20))
		}
		var r budgetResult
		i := bytes.Index(out, []byte(childResultTag))
		if i < 0 {
			t.Fatalf("budget %d MiB: the child reported nothing:\n%s", budget>>20, out)
		}
		if err := json.Unmarshal(bytes.TrimSpace(out[i+len(childResultTag):]), &r); err != nil {
			t.Fatalf("budget %d MiB: %v", budget>>20, err)
		}
		if r.Bytes = e.fileBytes(t, prefix); r.Bytes != int64(budgetRecords*(budgetLen+1)) {
			t.Fatalf("budget %d MiB: the sink wrote %d bytes, want %d", budget>>20, r.Bytes, budgetRecords*(budgetLen+1))
		}
		return r
	}
	tight := run(budgetLimit)
	loose := run(1 << 30)
	t.Logf("16 ready shards of 14 MiB: the sink held at most %.1f MiB under a budget of %d MiB (%v), %.1f MiB under 1 GiB (%v)",
		float64(tight.Held)/MiB, budgetLimit>>20, tight.Elapsed.Round(time.Millisecond), float64(loose.Held)/MiB, loose.Elapsed.Round(time.Millisecond))
	// The budget covers everything the sink reserves; it cannot cover a
	// batch the SDK decodes for the writer before the writer can reserve
	// for it or hand it back (prism runs the writer as a stage of its own:
	// docs/configuration.md, Sizing a worker). One such batch, MaxBatchBytes
	// at most, may be caught on top of the budget.
	if bound := int64(budgetLimit + budgetBatch); tight.Held > bound {
		t.Errorf("under a budget of %d MiB the sink held %.1f MiB, more than the budget and one batch the SDK decoded for the writer (%d MiB)", budgetLimit>>20, float64(tight.Held)/MiB, bound>>20)
	}
	if loose.Held <= budgetLimit {
		t.Errorf("under a budget of 1 GiB the sink held only %.1f MiB, no more than %d MiB: this pipeline cannot show whether the budget holds", float64(loose.Held)/MiB, budgetLimit>>20)
	}
}

// budgetChild runs the budget test's pipeline under the budget its
// environment names and reports a budgetResult.
func budgetChild() (budgetResult, error) {
	var r budgetResult
	budget, err := strconv.ParseInt(os.Getenv(childBudget), 10, 64)
	if err != nil {
		return r, fmt.Errorf("child: budget: %w", err)
	}
	beam.Init()
	bucket, prefix := os.Getenv(childBucket), os.Getenv(childPrefix)
	runtime.MemProfileRate = scaleProfileRate
	own := sampleOwnHeap(100*time.Millisecond, true)
	p, s := beam.NewPipelineWithRoot()
	col := beam.ParDo(s, &generateFn{Records: budgetRecords, Len: budgetLen}, beam.Impulse(s))
	sink.Write(s, col, sink.Config{
		Bucket: bucket, Prefix: prefix, Shards: budgetShards,
		MaxBatchBytes: budgetBatch, PartSize: budgetPartSize, Concurrency: 1, MaxWorkerMemory: budget,
		Endpoint: os.Getenv(childEndpoint), Region: s3test.Region, PathStyle: true,
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey,
	})
	began := time.Now()
	if err := ptest.Run(p); err != nil {
		return r, err
	}
	r.Elapsed = time.Since(began)
	_, r.Held = own.stop()
	return r, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
