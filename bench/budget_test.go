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
	// Short counts the times the budget was short (the s3once counters
	// memory_waits, memory_spills and memory_deferrals): zero means the
	// budget never bound.
	Short int64
}

// TestWorkerMemoryBudget: 16 ready shards on prism against a 64 MiB
// MaxWorkerMemory. The run finishes with every byte written, and the peak
// of what the sink held (batches, part buffers, encoders: the heap its own
// code allocated, from the heap profile) stays under the budget, give or
// take one batch that the SDK decoded for the writer before the writer
// could reserve for it (seen: 44 to 66 MiB); and the budget was short at
// least once (the memory counters), so the run did have more ready than
// the budget holds. A control run of the same pipeline under 1 GiB is never
// short, and its peak shows that the measure sees the batches the sink
// gathers. Whether its peak passes 64 MiB depends on how many bundles
// prism runs at once, which follows the machine's load (42 to 60 MiB on a
// quiet machine, 62 to 91 MiB on a loaded one), so that is not a bound of
// the test. Each run is a child process of its own: the budget is the
// process's.
func TestWorkerMemoryBudget(t *testing.T) {
	if os.Getenv("S3ONCE_WORKER_BUDGET_TEST") == "" {
		// Its heap figures follow how many writer bundles prism hands the
		// worker at once, which a loaded machine changes: the run under a
		// budget held from 44 to 66 MiB, against a bound of 80. make soak
		// runs it.
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
	t.Logf("16 ready shards of 14 MiB: the sink held at most %.1f MiB under a budget of %d MiB (%v, short %d times), %.1f MiB under 1 GiB (%v, short %d times)",
		float64(tight.Held)/MiB, budgetLimit>>20, tight.Elapsed.Round(time.Millisecond), tight.Short, float64(loose.Held)/MiB, loose.Elapsed.Round(time.Millisecond), loose.Short)
	// The budget covers everything the sink reserves; it cannot cover a
	// batch the SDK decodes for the writer before the writer can reserve
	// for it or hand it back (prism runs the writer as a stage of its own:
	// docs/configuration.md, Sizing a worker). One such batch, MaxBatchBytes
	// at most, may be caught on top of the budget.
	if bound := int64(budgetLimit + budgetBatch); tight.Held > bound {
		t.Errorf("under a budget of %d MiB the sink held %.1f MiB, more than the budget and one batch the SDK decoded for the writer (%d MiB)", budgetLimit>>20, float64(tight.Held)/MiB, bound>>20)
	}
	if tight.Short == 0 {
		t.Errorf("under a budget of %d MiB the budget was never short (memory_waits, memory_spills and memory_deferrals all 0): the run never had more ready than the budget holds, so it cannot show that the budget bounds it", budgetLimit>>20)
	}
	if loose.Short != 0 {
		t.Errorf("under a budget of 1 GiB the budget was short %d times: this pipeline needs far less", loose.Short)
	}
	// The measure's control: without a binding budget it sees at least
	// the batch the sink gathers for one shard.
	if shard := int64(budgetRecords * (budgetLen + 1) / budgetShards); loose.Held < shard {
		t.Errorf("under a budget of 1 GiB the sink held %.1f MiB, less than one shard's batch (%d MiB): the heap measure misses what the sink holds", float64(loose.Held)/MiB, shard>>20)
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
		Bucket: bucket, Prefix: prefix, Files: sink.Files{Shards: budgetShards}, Tuning: sink.Tuning{MaxBatchBytes: budgetBatch, PartSize: budgetPartSize, Concurrency: 1, MaxWorkerMemory: budget}, Connection: sink.Connection{Endpoint: os.Getenv(childEndpoint), Region: s3test.Region, PathStyle: true,
			Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
	})
	began := time.Now()
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		return r, err
	}
	r.Elapsed = time.Since(began)
	for _, c := range pr.Metrics().AllMetrics().Counters() {
		switch c.Namespace() + "/" + c.Name() {
		case "s3once/memory_waits", "s3once/memory_spills", "s3once/memory_deferrals":
			r.Short += c.Result()
		}
	}
	_, r.Held = own.stop()
	return r, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
