package sink

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

// partitionBenchPartitions is how many partitions the benchmark's run
// writes: 100 hourly windows of one destination.
const partitionBenchPartitions = 100

// BenchmarkPartitionCheck measures the barrier's partition check
// (checkPartitions) of a rerun whose files are all in place: the check lists
// every partition the run writes and looks each key up in the run's key
// set. The sub-benchmark names the run's file count (files=N, any value),
// spread evenly over 100 partitions. The folder lives in the in-memory S3
// (internal/testkit/s3mem), reached through the SDK's request path without a socket:
// the figure is the check's own cost, its requests' signing and parsing
// included, without a server's disk or network.
//
// Reported: sec/op for one check, cpu-sec/op (the process's CPU time, user
// and system, per check: steadier than sec/op on a shared machine, and the
// in-memory server's share is in it), list-calls/op, and ns/file.
func BenchmarkPartitionCheck(b *testing.B) {
	for _, files := range []int{10_000, 1_000_000} {
		b.Run("files="+strconv.Itoa(files), func(b *testing.B) { benchPartitionCheck(b, files) })
	}
}

func benchPartitionCheck(b *testing.B, files int) {
	fake := s3mem.New(s3mem.Options{})
	const bucket, prefix, ext = "bench", "out", ".jsonl.gz"
	perPart := (files + partitionBenchPartitions - 1) / partitionBenchPartitions
	objects := make(map[string][]byte, files)
	all := make([]*barrierFile, 0, files)
	body := []byte("x")
	for i := range files {
		start := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i/perPart) * time.Hour)
		window := windowTime(mtime.FromTime(start)) + "-" + windowTime(mtime.FromTime(start.Add(time.Hour)))
		key := ownkeys.FileKey(prefix, "dest", ownkeys.FileName{Window: window, Shard: i % perPart, Shards: perPart, File: 0, Ext: ext})
		objects[key] = body
		all = append(all, &barrierFile{
			p:  pendingFile{Result: FileResult{Destination: "dest", Window: window}},
			cr: recoverable.CommitToken{Key: key},
		})
	}
	fake.Seed(bucket, objects)
	objects = nil
	f := &barrierFn{S: folder{Bucket: bucket, Prefix: prefix}, b: s3bucket.New(fake.NewClient(s3mem.ClientOptions{MaxAttempts: 3}), s3bucket.Options{})}
	ctx := context.Background()
	lists0 := countOps(fake, s3fault.ListObjectsV2)
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if err := f.checkPartitions(ctx, all); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	lists := countOps(fake, s3fault.ListObjectsV2) - lists0
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-sec/op")
	b.ReportMetric(float64(lists)/float64(b.N), "list-calls/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(files), "ns/file")
}

// countOps counts the requests of an operation in the Fake's call log.
func countOps(fake *s3mem.Fake, op s3mem.Op) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.Op == op {
			n++
		}
	}
	return n
}
