// Package app is the harness the example pipelines (pipelines/batch,
// pipelines/streaming) and cmd/s3once-run share: the flags that
// become a sink.Config, running a pipeline on the runner the flags choose
// (the embedded prism runner by default), collecting the FileResults, and
// the summary printed at the end.
package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/s3once/s3once/sink"
)

// SinkFlags are the command-line flags of the sink's configuration. Beam's
// own flags (--runner, --endpoint for a job service, ...) live beside them in
// the same flag set, which is why the S3 endpoint is --s3-endpoint.
type SinkFlags struct {
	Bucket           string
	Prefix           string
	StagingPrefix    string
	Endpoint         string
	Region           string
	PathStyle        bool
	DisableChecksums bool
	MaxAttempts      int

	Compression     string
	Shards          int
	MaxBatchBytes   int64
	MaxFileBytes    int64
	MaxFileRecords  int64
	CheckpointBytes int64
	CheckpointEvery time.Duration
	PartSize        int64
	Concurrency     int
	InlineTailMax   int
	FinalizeCommit  string

	SkipPreflight    bool
	PreflightTimeout time.Duration
}

// Register adds the sink's flags to fs. defaultPrefix and defaultCompression
// are the example's own defaults.
func (f *SinkFlags) Register(fs *flag.FlagSet, defaultPrefix, defaultCompression string) {
	fs.StringVar(&f.Bucket, "bucket", "", "S3 bucket to write to (required)")
	fs.StringVar(&f.Prefix, "prefix", defaultPrefix, "key prefix of the output files")
	fs.StringVar(&f.StagingPrefix, "staging-prefix", "", "key prefix of the writer's side objects (default .s3once/staging/)")
	fs.StringVar(&f.Endpoint, "s3-endpoint", "", "S3 endpoint URL of an S3-compatible server; unset means AWS, with the standard credential chain")
	fs.StringVar(&f.Region, "s3-region", "", "bucket region (default: AWS_REGION or the shared config, else us-east-1)")
	fs.BoolVar(&f.PathStyle, "s3-path-style", false, "address buckets as <endpoint>/<bucket> (always on when --s3-endpoint is set)")
	fs.BoolVar(&f.DisableChecksums, "s3-disable-checksums", false, "send no CRC64NVME checksums, for servers that reject them")
	fs.IntVar(&f.MaxAttempts, "s3-max-attempts", 0, "AWS SDK attempts per S3 call (0: the SDK's default, 3)")

	fs.StringVar(&f.Compression, "compression", defaultCompression, "file compression: none, gzip or zstd")
	fs.IntVar(&f.Shards, "shards", 0, fmt.Sprintf("shards per destination and window (0: %d)", sink.DefaultShards))
	fs.Int64Var(&f.MaxBatchBytes, "max-batch-bytes", 0, "record bytes one worker holds per shard (0: 64 MiB)")
	fs.Int64Var(&f.MaxFileBytes, "max-file-bytes", 0, "roll files before this many record bytes (0: --max-batch-bytes)")
	fs.Int64Var(&f.MaxFileRecords, "max-file-records", 0, "roll files at this many records (0: no limit)")
	fs.Int64Var(&f.CheckpointBytes, "checkpoint-bytes", 0, "record bytes between two checkpoints of an open file (0: 16 MiB)")
	fs.DurationVar(&f.CheckpointEvery, "checkpoint-interval", 0, "also checkpoint after this much time (0: bytes alone decide)")
	fs.Int64Var(&f.PartSize, "part-size", 0, "multipart part size in bytes, at least 5 MiB (0: 8 MiB)")
	fs.IntVar(&f.Concurrency, "part-concurrency", 0, "parts uploaded at once per file (0: 4)")
	fs.IntVar(&f.InlineTailMax, "inline-tail-max", 0, "largest tail carried inside a checkpoint instead of a side object; -1 never (0: 4 KiB)")
	fs.StringVar(&f.FinalizeCommit, "finalize-commit", "", "commit at bundle finalization too: auto, always or never (empty: auto, which finalizes on Dataflow only)")

	fs.BoolVar(&f.SkipPreflight, "skip-preflight", false, "do not check the bucket, permissions and conditional writes before running")
	fs.DurationVar(&f.PreflightTimeout, "preflight-timeout", 2*time.Minute, "bound on the preflight")
}

// Config is the sink configuration the flags describe. Credentials are not
// flags: the AWS SDK's standard chain finds them (environment variables,
// shared files, instance or task roles), on the driver and on every worker.
func (f *SinkFlags) Config() sink.Config {
	return sink.Config{
		Bucket:             f.Bucket,
		Prefix:             f.Prefix,
		StagingPrefix:      f.StagingPrefix,
		Endpoint:           f.Endpoint,
		Region:             f.Region,
		PathStyle:          f.PathStyle || f.Endpoint != "",
		DisableChecksums:   f.DisableChecksums,
		MaxAttempts:        f.MaxAttempts,
		Compression:        f.Compression,
		Shards:             f.Shards,
		MaxBatchBytes:      f.MaxBatchBytes,
		MaxFileBytes:       f.MaxFileBytes,
		MaxFileRecords:     f.MaxFileRecords,
		CheckpointBytes:    f.CheckpointBytes,
		CheckpointInterval: f.CheckpointEvery,
		PartSize:           f.PartSize,
		Concurrency:        f.Concurrency,
		InlineTailMax:      f.InlineTailMax,
		FinalizeCommit:     f.FinalizeCommit,
	}
}
