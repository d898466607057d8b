package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn2x0[context.Context, sink.FileResult](&collectFn{})
}

// Counters of the collected results, in the "example" namespace: the summary
// falls back on them when the results were collected on remote workers.
var (
	metricFiles   = beam.NewCounter("example", "files")
	metricBytes   = beam.NewCounter("example", "bytes")
	metricRecords = beam.NewCounter("example", "records")
)

// collected holds the FileResults of each run, by run ID. With the embedded
// runner (and any loopback environment) DoFns run in the driver's process, so
// the driver reads them here; on remote workers the map stays empty and the
// summary uses the counters and a listing instead.
var (
	collectedMu sync.Mutex
	collected   = map[string][]sink.FileResult{}
)

// collectFn records each FileResult for the driver, counts it, and logs it
// (the worker logs are where a remote run's per-file results end up).
type collectFn struct {
	Run string `json:"run"`
}

func (f *collectFn) ProcessElement(ctx context.Context, r sink.FileResult) {
	collectedMu.Lock()
	collected[f.Run] = append(collected[f.Run], r)
	collectedMu.Unlock()
	metricFiles.Inc(ctx, 1)
	metricBytes.Inc(ctx, r.Bytes)
	metricRecords.Inc(ctx, r.Records)
	log.Debugf(ctx, "committed s3://%s/%s: %d bytes, %d records", r.Bucket, r.Key, r.Bytes, r.Records)
}

// Collect adds the collecting step for the results of one run and returns
// the run's ID, for Results.
func Collect(s beam.Scope, results beam.PCollection) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	beam.ParDo0(s.Scope("example.Collect"), &collectFn{Run: id}, results)
	return id
}

// committedSoFar counts the files the run collected so far, and their
// bytes (a file reported twice counts twice).
func committedSoFar(run string) (files int, bytes int64) {
	collectedMu.Lock()
	defer collectedMu.Unlock()
	for _, r := range collected[run] {
		bytes += r.Bytes
	}
	return len(collected[run]), bytes
}

// Results returns what the run collected in this process, one result per
// key (a retried bundle downstream of the commit may report a file twice),
// sorted by key; and forgets them.
func Results(run string) []sink.FileResult {
	collectedMu.Lock()
	rs := collected[run]
	delete(collected, run)
	collectedMu.Unlock()
	slices.SortFunc(rs, func(a, b sink.FileResult) int {
		return cmp.Or(strings.Compare(a.Bucket, b.Bucket), strings.Compare(a.Key, b.Key))
	})
	return slices.CompactFunc(rs, func(a, b sink.FileResult) bool { return a.Bucket == b.Bucket && a.Key == b.Key })
}
