// Command minimal is the smallest complete program that writes through
// s3once, in the shape a user's own program takes: beam.Init, the preflight,
// sink.Write, beamx.Run. It has no log filter and no helpers of the
// examples; the README's "Use it in your own program" quotes it.
//
//	AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... go run ./pipelines/minimal \
//	  --bucket demo --prefix minimal --s3-endpoint http://127.0.0.1:7070
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/filter"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/s3once/s3once/sink"
)

var (
	bucket   = flag.String("bucket", "", "bucket to write to (required)")
	prefix   = flag.String("prefix", "minimal", "folder of the output files")
	endpoint = flag.String("s3-endpoint", "", "S3-compatible endpoint URL; empty for AWS") // not --endpoint: Beam's job service
	lines    = flag.Int("lines", 1000, "number of lines to write")
)

// fileKey and report are named and registered, as every function a pipeline
// runs must be for runners that start workers of their own.
func fileKey(r sink.FileResult) string { return r.Key }
func report(n int)                     { log.Printf("committed %d files", n) }

func init() {
	register.Function1x1(fileKey)
	register.Function1x0(report)
	flag.StringVar(endpoint, "s3_endpoint", "", "the same as --s3-endpoint")
}

func main() {
	flag.Parse()
	beam.Init()
	cfg := sink.Config{Bucket: *bucket, Prefix: *prefix, Format: "text", Compression: "gzip",
		Endpoint: *endpoint, PathStyle: *endpoint != ""}
	ctx := context.Background()
	if err := sink.Preflight(ctx, cfg); err != nil {
		log.Fatal(err) // nothing was written
	}
	p, s := beam.NewPipelineWithRoot()
	words := make([]string, *lines)
	for i := range words {
		words[i] = fmt.Sprintf("line %06d", i)
	}
	files := sink.Write(s, beam.CreateList(s, words), cfg)
	// A FileResult may arrive more than once: key on (Bucket, Key).
	keys := filter.Distinct(s, beam.ParDo(s, fileKey, files))
	beam.ParDo0(s, report, stats.CountElms(s, keys))
	if err := beamx.Run(ctx, p); err != nil {
		log.Fatal(err)
	}
}
