package harness

import (
	"flag"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/s3once/s3once/sink"
)

// SinkFlags are the command-line flags of the sink's configuration. Beam's
// own flags (--runner, --endpoint for a job service, ...) live beside them in
// the same flag set, which is why the S3 endpoint is --s3-endpoint. Each
// flag sets its sink.Config field directly, as sinkFlagTable says.
type SinkFlags struct {
	cfg sink.Config

	SkipPreflight    bool
	PreflightTimeout time.Duration
}

// sinkFlag maps one flag onto one field of sink.Config.
type sinkFlag struct {
	Field string // the sink.Config field the flag sets
	Name  string // the flag's name, without dashes
	Usage string
}

// sinkFlagTable is the one list of the sink's flags. Register builds the
// flags from it and withFlagNames turns the Config fields that the
// library's messages name into these flags. The flag's type is the field's.
var sinkFlagTable = []sinkFlag{
	{"Bucket", "bucket", "S3 bucket to write to (required)"},
	{"Prefix", "prefix", "key prefix of the output files"},
	{"StagingPrefix", "staging-prefix", "key prefix of the writer's side objects (default .s3once/staging/)"},
	{"Endpoint", "s3-endpoint", "S3 endpoint URL of an S3-compatible server; unset means AWS, with the standard credential chain"},
	{"Region", "s3-region", "bucket region (default: AWS_REGION or the shared config, else us-east-1)"},
	{"PathStyle", "s3-path-style", "address buckets as <endpoint>/<bucket> (always on when --s3-endpoint is set)"},
	{"DisableChecksums", "s3-disable-checksums", "send no CRC64NVME checksums, for servers that reject them"},
	{"MaxAttempts", "s3-max-attempts", "AWS SDK attempts per S3 call (0: the SDK's default, 3)"},
	{"ThrottleBudget", "s3-throttle-budget", "how long one S3 call may be answered SlowDown before the run fails (0: 5m)"},

	{"Compression", "compression", "file compression: none, gzip or zstd"},
	{"Shards", "shards", fmt.Sprintf("shards per destination and window (0: %d); with --target-file-bytes, the most shards (0: %d)", sink.DefaultShards, sink.DefaultMaxAutoShards)},
	{"TargetFileBytes", "target-file-bytes", "automatic sharding: each destination and window gets ceil(its record bytes / this) shards (0: fixed --shards)"},
	{"MaxBatchBytes", "max-batch-bytes", "record bytes one worker holds per shard (0: 64 MiB)"},
	{"MaxFileBytes", "max-file-bytes", "roll files before this many record bytes (0: --max-batch-bytes)"},
	{"MaxFileRecords", "max-file-records", "roll files at this many records (0: no limit)"},
	{"CheckpointBytes", "checkpoint-bytes", "record bytes between two checkpoints of an open file, at most (0: 64 MiB)"},
	{"CheckpointInterval", "checkpoint-interval", "also checkpoint after this much time (0: the default, 5s; negative: bytes alone decide)"},
	{"PartSize", "part-size", "multipart part size in bytes, at least 5 MiB (0: 8 MiB)"},
	{"Concurrency", "part-concurrency", "parts uploaded at once per file (0: 4)"},
	{"InlineTailMax", "inline-tail-max", "largest tail carried inside a checkpoint instead of a side object; -1 never (0: 4 KiB)"},
	{"FinalizeCommit", "finalize-commit", "commit at bundle finalization too: auto, always or never (empty: auto, which never does)"},
	{"OutputVersion", "output-version", fmt.Sprintf("output version of a folder: 1 (the first releases) or %d (0: %d, for a new folder)", sink.LatestOutputVersion, sink.LatestOutputVersion)},
}

// Register adds the sink's flags to fs. defaultPrefix and defaultCompression
// are the example's own defaults.
func (f *SinkFlags) Register(fs *flag.FlagSet, defaultPrefix, defaultCompression string) {
	f.cfg.Prefix, f.cfg.Compression = defaultPrefix, defaultCompression
	cfg := reflect.ValueOf(&f.cfg).Elem()
	for _, e := range sinkFlagTable {
		field := cfg.FieldByName(e.Field)
		if !field.IsValid() {
			panic(fmt.Sprintf("app: flag --%s names sink.Config.%s, which does not exist", e.Name, e.Field))
		}
		switch p := field.Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, e.Name, *p, e.Usage)
		case *bool:
			fs.BoolVar(p, e.Name, *p, e.Usage)
		case *int:
			fs.IntVar(p, e.Name, *p, e.Usage)
		case *int64:
			fs.Int64Var(p, e.Name, *p, e.Usage)
		case *time.Duration:
			fs.DurationVar(p, e.Name, *p, e.Usage)
		default:
			panic(fmt.Sprintf("app: flag --%s: sink.Config.%s has type %T, which no flag kind takes", e.Name, e.Field, p))
		}
	}

	// pipelines/minimal spells the endpoint --s3_endpoint, as Beam spells
	// its own flags; both spellings set the same field.
	fs.StringVar(&f.cfg.Endpoint, "s3_endpoint", f.cfg.Endpoint, "the same as --s3-endpoint")

	fs.BoolVar(&f.SkipPreflight, "skip-preflight", false, "do not check the bucket, permissions and conditional writes before running")
	fs.DurationVar(&f.PreflightTimeout, "preflight-timeout", 2*time.Minute, "bound on the preflight")
}

// Config is the sink configuration the flags describe. Credentials are not
// flags: the AWS SDK's standard chain finds them (environment variables,
// shared files, instance or task roles), on the driver and on every worker.
func (f *SinkFlags) Config() sink.Config {
	cfg := f.cfg
	cfg.PathStyle = cfg.PathStyle || cfg.Endpoint != ""
	return cfg
}

// flagOf maps a sink.Config field to the flag that sets it.
var flagOf = func() map[string]string {
	m := make(map[string]string, len(sinkFlagTable))
	for _, e := range sinkFlagTable {
		m[e.Field] = "--" + e.Name
	}
	return m
}()

// configField matches a Config field as the library's messages name it.
var configField = regexp.MustCompile(`Config\.[A-Za-z0-9_]+`)

// withFlagNames says the examples' flag where a library message names the
// Config field: the library speaks of Config, since a user's own program
// has no such flags. Fields without a flag stay as they are.
func withFlagNames(msg string) string {
	return configField.ReplaceAllStringFunc(msg, func(m string) string {
		if f, ok := flagOf[strings.TrimPrefix(m, "Config.")]; ok {
			return f
		}
		return m
	})
}
