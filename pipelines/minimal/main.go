// Command minimal is the smallest complete program that writes through
// s3once, in the shape a user's own program takes: beam.Init, the preflight,
// sink.Write, program.Run, and program.Exit on a failure. It has no log
// filter and no helpers of the examples; the README's "Use it in your own
// program" quotes it.
//
//	AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... go run ./pipelines/minimal \
//	  --bucket demo --prefix minimal --s3-endpoint http://127.0.0.1:7070
package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/program"
	"github.com/s3once/s3once/sink"
)

var (
	bucket   = flag.String("bucket", "", "bucket to write to (required)")
	prefix   = flag.String("prefix", "minimal", "folder of the output files")
	endpoint = flag.String("s3-endpoint", "", "S3-compatible endpoint URL; empty for AWS") // not --endpoint: Beam's job service
	lines    = flag.Int("lines", 1000, "number of lines to write")
)

func init() {
	flag.StringVar(endpoint, "s3_endpoint", "", "the same as --s3-endpoint")
}

func main() {
	flag.Parse()
	beam.Init()
	cfg := sink.Config{Bucket: *bucket, Prefix: *prefix,
		Files:      sink.Files{Format: "text", Compression: "gzip"},
		Connection: sink.Connection{Endpoint: *endpoint, PathStyle: *endpoint != ""}}
	ctx := context.Background()
	if err := sink.Preflight(ctx, cfg); err != nil {
		program.Exit(err) // nothing was written
	}
	p, s := beam.NewPipelineWithRoot()
	words := make([]string, *lines)
	for i := range words {
		words[i] = fmt.Sprintf("line %06d", i)
	}
	// Write returns the committed files' FileResults, for a step that goes
	// on from them (one may arrive more than once: key on Bucket and Key).
	sink.Write(s, beam.CreateList(s, words), cfg)
	out, err := program.Run(ctx, p)
	if err != nil {
		program.Exit(err) // the runner's report, then the failure, last
	}
	fmt.Println(out) // committed 4 files (4 kept from an earlier run)
}
