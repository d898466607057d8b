package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3" // s3:// paths for textio
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

func init() {
	register.DoFn2x0[[]byte, func(string)](&generateFn{})
	register.Emitter1[string]()
}

// recordLen is the length of every record, without its newline.
const recordLen = 99

// generateFn emits Records records of Len bytes from one impulse.
type generateFn struct {
	Records int `json:"records"`
	Len     int `json:"len"`
}

func (f *generateFn) ProcessElement(_ []byte, emit func(string)) {
	buf := make([]byte, f.Len)
	for i := range f.Records {
		emit(string(record(buf, i)))
	}
}

// record fills buf with record i: its number, then letters that depend on it.
func record(buf []byte, i int) []byte {
	n := strconv.AppendInt(buf[:0], int64(i), 10)
	for j := len(n); j < len(buf); j++ {
		buf[j] = 'a' + byte((i*7+j)%26)
	}
	return buf
}

// autoTarget is side "sink-auto"'s TargetFileBytes.
const autoTarget = 25 << 20

// BenchmarkPipeline runs one pipeline per operation on prism: the same
// records, generated in the pipeline, written by sink.Write (exactly once,
// DefaultShards shards, self-checkpointing) or by Beam's textio.Write to an
// s3:// path (one file through Beam's S3 filesystem, which streams it into the
// SDK's manager.Uploader), both against the same local server. Side
// "sink-auto" is sink.Write with automatic sharding (TargetFileBytes 25 MiB:
// 4 shards at 1e6 records, as many as the fixed default, and 1 at 1e5), so
// that its ratio to side "sink" is the cost of the extra pass.
func BenchmarkPipeline(b *testing.B) {
	for _, records := range []int{100_000, 1_000_000} {
		b.Run("records="+strconv.Itoa(records), func(b *testing.B) {
			for _, side := range []string{"sink", "sink-auto", "textio"} {
				b.Run("side="+side, func(b *testing.B) {
					e := newEnv(b)
					beamS3Env(b, e)
					total := int64(records) * (recordLen + 1)
					b.SetBytes(total)
					n := 0
					for b.Loop() {
						prefix := fmt.Sprintf("%s/%d", side, n)
						n++
						p, s := beam.NewPipelineWithRoot()
						col := beam.ParDo(s, &generateFn{Records: records, Len: recordLen}, beam.Impulse(s))
						switch side {
						case "sink", "sink-auto":
							cfg := sink.Config{
								Bucket: e.bucket, Prefix: prefix, Connection: sink.Connection{Endpoint: e.srv.Endpoint(), Region: s3test.Region, PathStyle: true,
									Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
							}
							if side == "sink-auto" {
								cfg.TargetFileBytes = autoTarget
							}
							sink.Write(s, col, cfg)
						case "textio":
							textio.Write(s, fmt.Sprintf("s3://%s/%s/out.txt", e.bucket, prefix), col)
						}
						if err := ptest.Run(p); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						if got := e.prefixBytes(b, prefix+"/"); got != total {
							b.Fatalf("%s wrote %d bytes, want %d", side, got, total)
						}
						e.deletePrefix(b, "")
						b.StartTimer()
					}
					b.ReportMetric(float64(records)*float64(n)/b.Elapsed().Seconds(), "records/s")
				})
			}
		})
	}
}

// prefixBytes sums the sizes of the objects under prefix, the sink's
// settings marker and manifests aside.
func (e *env) prefixBytes(b *testing.B, prefix string) int64 {
	b.Helper()
	var sum int64
	p := s3.NewListObjectsV2Paginator(e.client, &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out.Contents {
			if k := aws.ToString(o.Key); ownkeys.IsSettingsAnywhere(k) || ownkeys.IsManifestAnywhere(k) {
				continue // the sink's settings marker and manifests, not output
			}
			sum += aws.ToInt64(o.Size)
		}
	}
	return sum
}
