package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
	"github.com/s3once/s3once/sink"
)

// The scale curve (make bench-scale): how the pipeline's time and the sink's
// memory grow with the records and the shards, and how the stream's time and
// heap grow with the file. benchrounds' scale plan picks the grid; every cell
// runs in a process of its own.

// scaleProfileRate is the heap profile's sampling rate during the scale
// benchmarks: one sample per 64 KiB allocated on average (the runtime's
// default is 512 KiB), so that the sink's share of the heap is estimated
// from many samples.
const scaleProfileRate = 64 << 10

// scaleBudget is the scale pipeline's MaxWorkerMemory: low enough to bind
// (without it, the sink held 708 MiB at 1e7 records and 4 shards, with
// every ready shard's batch at once), above the 168 MiB one batch of the
// default settings needs. sink-held-MiB must stay under it.
const scaleBudget = 256 << 20

// BenchmarkScalePipeline runs one sink.Write pipeline per operation on prism,
// records of 99 bytes plus a newline, at each record count and shard count
// the sub-benchmark names (records=N/shards=S; any values are accepted, so
// the plan chooses the grid).
//
// Memory: prism runs in this process, and its in-memory shuffle holds every
// record at some point, so the process's heap says little about the sink.
// The sink's own heap is measured from the heap profile instead:
// sink-live-MiB is the largest live heap, as of a garbage collection, of
// objects allocated with a frame of s3once's library packages on the stack
// (sink, recoverable, committer, coder, internal/...; the benchmark's own
// package excluded), the profile's samples scaled to bytes as pprof does,
// sampled every 50 ms. It counts the batches the sink decodes and holds, its
// part buffers and the SDK's buffers under its calls; not the runner's copies
// of the elements. proc-heap-MiB is the whole process's peak heap, garbage
// and prism included, for comparison.
//
// sink-live counts the elements the sink hands to the runner too: the
// record packs its encoder emits and the encoded batches sit in prism's
// in-memory shuffle, under the sink's frames, until a later stage takes
// them, so on prism it grows with the input whatever the sink keeps.
// sink-held-MiB leaves them out: the largest live heap of objects allocated
// under s3once's library code but not by the code that makes an element for
// the runner (the encoder and its packer, encodeBatch; see emitsElement).
// That is what the sink's own DoFns hold (the batches they gather and
// write, their part buffers, encoders and the SDK's buffers under their
// calls), which the design bounds by a batch and the part buffers, whatever
// the input; on a distributed runner the shuffle's copies are the runner's.
func BenchmarkScalePipeline(b *testing.B) {
	for _, records := range []int{100_000, 1_000_000, 10_000_000} {
		b.Run("records="+strconv.Itoa(records), func(b *testing.B) {
			for _, shards := range []int{1, 4, 16} {
				b.Run("shards="+strconv.Itoa(shards), func(b *testing.B) {
					scalePipeline(b, records, shards)
				})
			}
		})
	}
}

func scalePipeline(b *testing.B, records, shards int) {
	e := newEnv(b)
	total := int64(records) * (recordLen + 1)
	b.SetBytes(total)
	runtime.MemProfileRate = scaleProfileRate
	own := startOwnHeap(50 * time.Millisecond)
	proc := benchkit.StartHeapSampler(10 * time.Millisecond)
	n := 0
	for b.Loop() {
		prefix := fmt.Sprintf("scale/%d", n)
		n++
		p, s := beam.NewPipelineWithRoot()
		col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, beam.Impulse(s))
		sink.Write(s, col, sink.Config{
			Bucket: e.bucket, Prefix: prefix, Files: sink.Files{Shards: shards}, Tuning: sink.Tuning{MaxWorkerMemory: scaleBudget}, Connection: sink.Connection{Endpoint: e.srv.Endpoint(), Region: s3test.Region, PathStyle: true,
				Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
		})
		if err := ptest.Run(p); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := e.fileBytes(b, prefix); got != total {
			b.Fatalf("the sink wrote %d bytes, want %d", got, total)
		}
		e.deletePrefix(b, "")
		b.StartTimer()
	}
	peak := proc.Stop()
	ownPeak, heldPeak := own.stop()
	b.ReportMetric(float64(records)*float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(ownPeak)/MiB, "sink-live-MiB")
	b.ReportMetric(float64(heldPeak)/MiB, "sink-held-MiB")
	b.ReportMetric(float64(peak.Objects)/MiB, "proc-heap-MiB")
}

// fileBytes sums the sizes of the sink's files under prefix: its markers
// (the settings marker, _SUCCESS) aside.
func (e *env) fileBytes(b testing.TB, prefix string) int64 {
	b.Helper()
	var sum int64
	p := s3.NewListObjectsV2Paginator(e.client, &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			if ownkeys.IsSettings(prefix, key) || ownkeys.IsMarker(prefix, key) || ownkeys.IsManifest(prefix, key) {
				continue
			}
			sum += aws.ToInt64(o.Size)
		}
	}
	return sum
}

// BenchmarkScaleStream writes one file of each size per operation through a
// stream (8 MiB parts, 4 in flight, Write calls of 256 KiB), from a fresh
// Writer, and reports the time per GiB and the process's peak heap: heap-MiB
// counts garbage not yet collected, live-heap-MiB the largest live heap a
// collection marked. The stream is all the process does.
func BenchmarkScaleStream(b *testing.B) {
	for _, size := range []int64{64 * MiB, 256 * MiB, 1 * GiB, 4 * GiB} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			e := newEnv(b)
			ctx := context.Background()
			b.SetBytes(size)
			heap := benchkit.StartHeapSampler(time.Millisecond)
			n := 0
			for b.Loop() {
				w, err := recoverable.NewWriter(e.client, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
				if err != nil {
					b.Fatal(err)
				}
				key := fmt.Sprintf("scale/%s/%d", sizeName(size), n)
				n++
				if err := writeStream(ctx, w, e.client, e.bucket, key, size); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				e.checkSize(b, key, size)
				e.deleteKey(b, key)
				b.StartTimer()
			}
			peak := heap.Stop()
			b.ReportMetric(b.Elapsed().Seconds()/float64(n)/(float64(size)/GiB), "s/GiB")
			b.ReportMetric(float64(peak.Objects)/MiB, "heap-MiB")
			b.ReportMetric(float64(peak.Live)/MiB, "live-heap-MiB")
		})
	}
}

// ownHeap follows the live heap allocated by s3once's library code, from the
// heap profile (see BenchmarkScalePipeline).
type ownHeap struct {
	quit chan struct{}
	done sync.WaitGroup
	peak int64 // under s3once's library code
	held int64 // the same, less what it made for the runner
	own  map[uintptr]frameKind
}

func startOwnHeap(every time.Duration) *ownHeap { return sampleOwnHeap(every, false) }

// sampleOwnHeap is startOwnHeap that, with collect, runs a collection before
// each sample: the profile then counts the objects live at that moment,
// where otherwise it counts every object until the collection after it
// died (garbage included, up to GOGC percent of the live heap).
func sampleOwnHeap(every time.Duration, collect bool) *ownHeap {
	h := &ownHeap{quit: make(chan struct{}), own: map[uintptr]frameKind{}}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		var recs []runtime.MemProfileRecord
		for {
			select {
			case <-h.quit:
				return
			case <-t.C:
			}
			if collect {
				// Twice: the profile a collection publishes is the
				// previous one's.
				runtime.GC()
				runtime.GC()
			}
			n, ok := runtime.MemProfile(recs, false)
			if !ok {
				recs = make([]runtime.MemProfileRecord, n+n/4+64)
				continue
			}
			var sum, held int64
			for _, r := range recs[:n] {
				if r.InUseBytes() == 0 {
					continue
				}
				switch h.classify(r.Stack()) {
				case ownFrame:
					b := scaledInUse(r)
					sum += b
					held += b
				case emitFrame:
					sum += scaledInUse(r)
				}
			}
			h.peak = max(h.peak, sum)
			h.held = max(h.held, held)
		}
	}()
	return h
}

// stop ends the sampling and returns the peaks, in bytes: of everything
// allocated under s3once's library code, and of what of it the sink holds
// itself.
func (h *ownHeap) stop() (own, held int64) {
	runtime.GC() // publish the last cycle's profile
	close(h.quit)
	h.done.Wait()
	return h.peak, h.held
}

// scaledInUse estimates the bytes a profile record stands for: each sampled
// object of average size s was drawn with probability 1-exp(-s/rate).
func scaledInUse(r runtime.MemProfileRecord) int64 {
	if r.AllocObjects == 0 {
		return 0
	}
	avg := float64(r.AllocBytes) / float64(r.AllocObjects)
	scale := 1 / (1 - math.Exp(-avg/float64(runtime.MemProfileRate)))
	return int64(float64(r.InUseBytes()) * scale)
}

const ownPrefix = "github.com/s3once/s3once/"

// frameKind says what a frame of an allocation's stack is.
type frameKind int8

const (
	otherFrame frameKind = iota // not s3once's library code
	ownFrame                    // s3once's library code
	emitFrame                   // s3once's code making an element for the runner
)

// emitsElement lists the functions of package sink that make the elements
// it hands to the runner: the encoder's records and packs, and the encoded
// batches.
var emitsElement = []string{
	ownPrefix + "sink.(*encodeFn).",
	ownPrefix + "internal/pack.(*Packer[",
	ownPrefix + "internal/pack.Of",
	ownPrefix + "sink.encodeBatch",
	ownPrefix + "sink.(*batchEmitter).",
}

// classify says whose an allocation is: the sink's if any frame of its
// stack is s3once's library code, and one the sink made for the runner if
// any frame is a function of emitsElement (everything the encoder allocates
// is either emitted or garbage).
func (h *ownHeap) classify(stack []uintptr) frameKind {
	kind := otherFrame
	for _, pc := range stack {
		k, seen := h.own[pc]
		if !seen {
			if fn := runtime.FuncForPC(pc); fn != nil {
				k = frameOf(fn.Name())
			}
			h.own[pc] = k
		}
		kind = max(kind, k)
		if kind == emitFrame {
			break
		}
	}
	return kind
}

func frameOf(name string) frameKind {
	if !strings.HasPrefix(name, ownPrefix) || strings.HasPrefix(name, ownPrefix+"bench") || strings.HasPrefix(name, ownPrefix+"internal/testkit/") {
		return otherFrame // the benchmark's own code, and the kit it measures with
	}
	for _, p := range emitsElement {
		if strings.HasPrefix(name, p) {
			return emitFrame
		}
	}
	return ownFrame
}
