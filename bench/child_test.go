package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// childEnv names the environment variable that turns the test binary into a
// child process of BenchmarkPeakMemory; the others tell the child what to do.
const (
	childEnv       = "S3ONCE_BENCH_CHILD"
	childEndpoint  = "S3ONCE_BENCH_ENDPOINT"
	childBucket    = "S3ONCE_BENCH_BUCKET"
	childSize      = "S3ONCE_BENCH_SIZE"
	childResultTag = "s3once-bench-peak: "
)

// childResult is what the child reports, in bytes.
type childResult struct {
	// BaseRSS is the peak RSS before the stream was opened: the binary, the
	// runtime and the packages' initialisation.
	BaseRSS uint64
	// PeakRSS is the peak RSS of the whole run.
	PeakRSS uint64
	// BaseHeap is the Go heap, after a collection, before the stream was
	// opened.
	BaseHeap uint64
	// Heap is the peak of the Go heap while the stream wrote.
	Heap benchkit.HeapPeak
}

// BenchmarkPeakMemory writes each size through one stream in a child process
// per operation and reports the child's peak Go heap and peak RSS. A stream
// holds at most PartSize x (Concurrency + 1) bytes of buffers: with the
// defaults, 8 MiB x 5 = 40 MiB, whatever the file's size.
//
// The child runs with GOGC=20, so that the heap it samples follows what the
// stream keeps rather than how far the collector lets garbage run ahead (with
// the default GOGC=100 a short run may end before the first collection that
// sees all five buffers, and a long one may pile up garbage up to twice the
// live heap; neither says anything about the stream).
//
// Metrics, in MiB, averaged over the operations: heap (peak bytes in heap
// objects, garbage included), stream-heap (heap minus the heap before the
// stream was opened: the binary's own packages, Beam's included, hold a few
// MiB), live-heap (the largest live heap a collection marked), stream-live
// (live-heap minus the heap before the stream), RSS (peak resident set) and
// RSS-growth (RSS minus the peak before the stream).
func BenchmarkPeakMemory(b *testing.B) {
	for _, size := range []int64{256 * MiB, 2 * GiB} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			e := newEnv(b)
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			var sum childResult
			n := 0
			for b.Loop() {
				n++
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(),
					childEnv+"=memory",
					childEndpoint+"="+e.srv.Endpoint(),
					childBucket+"="+e.bucket,
					childSize+"="+strconv.FormatInt(size, 10),
					"GOGC=20",
				)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("child: %v\n%s\n%s", err, out, stderr.Bytes())
				}
				r, err := parseChild(out)
				if err != nil {
					b.Fatal(err)
				}
				sum.BaseRSS += r.BaseRSS
				sum.PeakRSS += r.PeakRSS
				sum.BaseHeap += r.BaseHeap
				sum.Heap.Objects += r.Heap.Objects
				sum.Heap.Live += r.Heap.Live
				sum.Heap.Collections += r.Heap.Collections
			}
			mib := func(v uint64) float64 { return float64(v) / float64(n) / MiB }
			b.ReportMetric(mib(sum.Heap.Objects), "heap-MiB")
			b.ReportMetric(mib(sum.Heap.Objects-sum.BaseHeap), "stream-heap-MiB")
			b.ReportMetric(mib(sum.Heap.Live), "live-heap-MiB")
			b.ReportMetric(mib(sum.Heap.Live-sum.BaseHeap), "stream-live-MiB")
			b.ReportMetric(mib(sum.PeakRSS), "RSS-MiB")
			b.ReportMetric(mib(sum.PeakRSS-sum.BaseRSS), "RSS-growth-MiB")
			b.ReportMetric(float64(sum.Heap.Collections)/float64(n), "GCs/op")
		})
	}
}

func parseChild(out []byte) (childResult, error) {
	var r childResult
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, childResultTag); ok {
			err := json.Unmarshal([]byte(rest), &r)
			return r, err
		}
	}
	return r, fmt.Errorf("child printed no result:\n%s", out)
}

func runChild(mode string) int {
	var r any
	var err error
	switch mode {
	case "memory":
		r, err = memoryChild()
	case "budget":
		r, err = budgetChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", mode)
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	j, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", childResultTag, j)
	return 0
}

// memoryChild writes the pattern through one stream, closes it for commit,
// and aborts the upload (the object itself is not needed).
func memoryChild() (childResult, error) {
	var r childResult
	size, err := strconv.ParseInt(os.Getenv(childSize), 10, 64)
	if err != nil {
		return r, fmt.Errorf("child: size: %w", err)
	}
	bucket := os.Getenv(childBucket)
	if r.BaseRSS, err = benchkit.PeakRSS(); err != nil {
		return r, err
	}
	client := s3test.NewClient(os.Getenv(childEndpoint), s3test.ClientOptions{MaxAttempts: attempts})
	w, err := recoverable.NewWriter(client, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
	if err != nil {
		return r, err
	}
	ctx := context.Background()
	key := fmt.Sprintf("memory/%d-%d", size, time.Now().UnixNano())
	runtime.GC()
	base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(base)
	r.BaseHeap = base[0].Value.Uint64()
	sampler := benchkit.StartHeapSampler(time.Millisecond)
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		return r, err
	}
	if err := writeAll(s, benchkit.NewPattern(size)); err != nil {
		return r, err
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		return r, err
	}
	r.Heap = sampler.Stop()
	if cr.Size() != size {
		return r, fmt.Errorf("child: commit token holds %d bytes, wrote %d", cr.Size(), size)
	}
	if r.PeakRSS, err = benchkit.PeakRSS(); err != nil {
		return r, err
	}
	_, err = client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(cr.UploadID),
	})
	return r, err
}
