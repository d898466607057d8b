package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/parquetio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/sink"
)

// pqRecord is the Parquet benchmark's record in parquet-go's tag dialect,
// the one s3once reads.
type pqRecord struct {
	ID    int64   `parquet:"id"`
	User  string  `parquet:"user"`
	Text  string  `parquet:"text"`
	Score float64 `parquet:"score"`
	Count int32   `parquet:"count"`
	Flag  bool    `parquet:"flag"`
}

// pqRecordX is pqRecord in xitongsys/parquet-go's tag dialect, the one Beam's
// parquetio reads: the same columns, of the same types.
type pqRecordX struct {
	ID    int64   `parquet:"name=id, type=INT64"`
	User  string  `parquet:"name=user, type=BYTE_ARRAY, convertedtype=UTF8"`
	Text  string  `parquet:"name=text, type=BYTE_ARRAY, convertedtype=UTF8"`
	Score float64 `parquet:"name=score, type=DOUBLE"`
	Count int32   `parquet:"name=count, type=INT32"`
	Flag  bool    `parquet:"name=flag, type=BOOLEAN"`
}

func init() {
	beam.RegisterType(reflect.TypeFor[pqRecord]())
	beam.RegisterType(reflect.TypeFor[pqRecordX]())
	register.DoFn2x0[[]byte, func(pqRecord)](&pqGenerateFn{})
	register.DoFn2x0[[]byte, func(pqRecordX)](&pqGenerateXFn{})
	register.Emitter1[pqRecord]()
	register.Emitter1[pqRecordX]()
}

// pqTextLen is the length of every record's text column.
const pqTextLen = 64

// pqFill returns record i: the same values for both dialects.
func pqFill(buf []byte, i int) pqRecord {
	return pqRecord{
		ID:    int64(i),
		User:  "user-" + strconv.Itoa(i%1000),
		Text:  string(record(buf, i)),
		Score: float64(i%10007) * 0.25,
		Count: int32(i % 100),
		Flag:  i%3 == 0,
	}
}

// pqGenerateFn emits Records records from one impulse, for sink.Write.
type pqGenerateFn struct {
	Records int `json:"records"`
}

func (f *pqGenerateFn) ProcessElement(_ []byte, emit func(pqRecord)) {
	buf := make([]byte, pqTextLen)
	for i := range f.Records {
		emit(pqFill(buf, i))
	}
}

// pqGenerateXFn emits the same records as pqGenerateFn, for parquetio.Write.
type pqGenerateXFn struct {
	Records int `json:"records"`
}

func (f *pqGenerateXFn) ProcessElement(_ []byte, emit func(pqRecordX)) {
	buf := make([]byte, pqTextLen)
	for i := range f.Records {
		emit(pqRecordX(pqFill(buf, i)))
	}
}

// BenchmarkParquetPipeline runs one pipeline per operation on prism, as
// BenchmarkPipeline does for text: the same records, generated in the
// pipeline, written as Parquet by sink.Write (exactly once, DefaultShards
// shards, self-checkpointing, snappy pages, row groups of
// DefaultRowGroupBytes) or by Beam's parquetio.Write to an s3:// path (one
// file through one worker, with xitongsys/parquet-go: snappy pages, row
// groups of 128 MiB), both against the same local server. Each side has its
// own struct type, the same columns in its library's tag dialect.
//
// Every operation checks, outside the timed span, that the files under its
// prefix hold all the records: the row counts of their footers.
func BenchmarkParquetPipeline(b *testing.B) {
	for _, records := range []int{100_000, 1_000_000} {
		b.Run("records="+strconv.Itoa(records), func(b *testing.B) {
			for _, side := range []string{"sink", "parquetio"} {
				b.Run("side="+side, func(b *testing.B) {
					e := newEnv(b)
					beamS3Env(b, e)
					n := 0
					for b.Loop() {
						prefix := fmt.Sprintf("%s/%d", side, n)
						n++
						p, s := beam.NewPipelineWithRoot()
						imp := beam.Impulse(s)
						switch side {
						case "sink":
							col := beam.ParDo(s, &pqGenerateFn{Records: records}, imp)
							sink.Write(s, col, sink.Config{
								Bucket: e.bucket, Prefix: prefix, Files: sink.Files{Format: "parquet"}, Connection: sink.Connection{Endpoint: e.srv.Endpoint(), Region: s3test.Region, PathStyle: true,
									Credentials: sink.Credentials{AccessKeyIDEnv: s3test.AccessKeyEnv, SecretAccessKeyEnv: s3test.SecretKeyEnv}},
							})
						case "parquetio":
							col := beam.ParDo(s, &pqGenerateXFn{Records: records}, imp)
							parquetio.Write(s, fmt.Sprintf("s3://%s/%s/out.parquet", e.bucket, prefix), col)
						}
						if err := ptest.Run(p); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						if got := e.parquetRows(b, prefix+"/"); got != int64(records) {
							b.Fatalf("%s wrote %d records, want %d", side, got, records)
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

// beamS3Env points Beam's S3 filesystem, which takes its configuration from
// the AWS SDK's default chain, at e's server. A numeric host makes the SDK
// address buckets by path.
func beamS3Env(b *testing.B, e *env) {
	b.Setenv("AWS_ENDPOINT_URL", e.srv.Endpoint())
	b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	b.Setenv("AWS_REGION", s3test.Region)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// parquetRows sums the row counts in the footers of the Parquet files under
// prefix, read with parquet-go; the sink's settings marker aside, anything
// else there fails.
func (e *env) parquetRows(b *testing.B, prefix string) int64 {
	b.Helper()
	ctx := context.Background()
	var rows int64
	files := 0
	p := s3.NewListObjectsV2Paginator(e.client, &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			if ownkeys.IsSettingsAnywhere(key) || ownkeys.IsManifestAnywhere(key) {
				continue // the sink's settings marker and manifests
			}
			if !strings.HasSuffix(key, ".parquet") {
				b.Fatalf("s3://%s/%s: not a Parquet file", e.bucket, key)
			}
			res, err := e.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: o.Key})
			if err != nil {
				b.Fatalf("get s3://%s/%s: %v", e.bucket, key, err)
			}
			data, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				b.Fatalf("read s3://%s/%s: %v", e.bucket, key, err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatalf("s3://%s/%s: %v", e.bucket, key, err)
			}
			rows += f.NumRows()
			files++
		}
	}
	if files == 0 {
		b.Fatalf("no file under s3://%s/%s", e.bucket, prefix)
	}
	return rows
}
