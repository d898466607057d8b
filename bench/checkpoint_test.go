package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/s3once/s3once/internal/testkit/benchkit"
	"github.com/s3once/s3once/internal/testkit/streamtest"
	"github.com/s3once/s3once/recoverable"
)

// BenchmarkCheckpointOverhead writes one object per operation through a
// stream that persists on a timer, checked between Write calls, and through
// one that never persists. A persist waits for the parts in flight and
// uploads the tail as a side object; the side objects are deleted after each
// operation, outside the timing. %-in-persist is the share of the time spent
// inside Persist calls: a direct measure of the overhead that the load on the
// machine affects far less than a ratio of two runs' throughputs.
func BenchmarkCheckpointOverhead(b *testing.B) {
	sides := []struct {
		name  string
		every time.Duration
	}{
		{"never", 0},
		{"1s", time.Second},
		{"100ms", 100 * time.Millisecond},
	}
	for _, size := range []int64{256 * MiB, 1 * GiB} {
		b.Run("size="+sizeName(size), func(b *testing.B) {
			for _, side := range sides {
				b.Run("side="+side.name, func(b *testing.B) {
					e := newEnv(b)
					w, err := recoverable.NewWriter(e.client, recoverable.Options{PartSize: partSize, Concurrency: concurrency})
					if err != nil {
						b.Fatal(err)
					}
					ctx := context.Background()
					b.SetBytes(size)
					n, persists := 0, 0
					var persistTime time.Duration
					for b.Loop() {
						key := fmt.Sprintf("checkpoint/%s/%d", side.name, n)
						n++
						tokens, spent, err := writePersisting(ctx, w, e, key, size, side.every)
						if err != nil {
							b.Fatal(err)
						}
						persists += len(tokens)
						persistTime += spent
						b.StopTimer()
						e.checkSize(b, key, size)
						for _, rr := range tokens {
							if err := w.Cleanup(ctx, rr); err != nil {
								b.Fatal(err)
							}
						}
						e.deleteKey(b, key)
						b.StartTimer()
					}
					b.ReportMetric(float64(persists)/float64(n), "persists/op")
					if persists > 0 {
						b.ReportMetric(float64(persistTime.Microseconds())/float64(persists)/1000, "ms/persist")
					}
					b.ReportMetric(100*persistTime.Seconds()/b.Elapsed().Seconds(), "%-in-persist")
				})
			}
		})
	}
}

// writePersisting writes size bytes to a new stream, persisting whenever
// every has passed since the last persist (never when every is 0), then
// commits it. It returns the tokens and the time spent in Persist.
func writePersisting(ctx context.Context, w *recoverable.Writer, e *env, key string, size int64, every time.Duration) ([]recoverable.ResumeToken, time.Duration, error) {
	s, err := w.Open(ctx, e.bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer s.Dispose(ctx)
	var tokens []recoverable.ResumeToken
	var spent time.Duration
	src := benchkit.NewPattern(size)
	next := time.Now().Add(every)
	for {
		p := src.Next(writeChunk)
		if len(p) == 0 {
			break
		}
		if _, err := s.Write(p); err != nil {
			return tokens, spent, err
		}
		if every > 0 {
			if now := time.Now(); now.After(next) {
				rr, err := s.Persist(ctx)
				if err != nil {
					return tokens, spent, err
				}
				tokens = append(tokens, rr)
				done := time.Now()
				spent += done.Sub(now)
				next = done.Add(every)
			}
		}
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		return tokens, spent, err
	}
	return tokens, spent, streamtest.Complete(ctx, e.client, cr)
}
