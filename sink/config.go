package sink

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/format"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// ErrInvalidConfig is wrapped by every error Validate and TryWrite return for a
// configuration that cannot work. Its message carries the stable code
// errcode.InvalidConfig.
var ErrInvalidConfig = errcode.New(errcode.InvalidConfig, "s3once sink: invalid configuration")

// Defaults of Config's zero values, and the bounds Validate enforces.
const (
	// DefaultShards is the number of shards per destination and window when
	// Config.Shards is 0.
	DefaultShards = 4
	// MaxShards bounds Config.Shards.
	MaxShards = 10000
	// DefaultMaxAutoShards is the most shards a destination and window get
	// with automatic sharding (Config.TargetFileBytes) when Config.Shards
	// is 0.
	DefaultMaxAutoShards = 1000
	// LatestOutputVersion is the output version a Config with OutputVersion
	// 0 writes (see Config.OutputVersion).
	LatestOutputVersion = 2
	// DefaultMaxWorkerMemory is the default of Config.MaxWorkerMemory: half
	// of a 2 GiB worker, leaving the rest to the runner, the SDK and the
	// garbage collector's headroom.
	DefaultMaxWorkerMemory = 1 << 30
	// DefaultMaxBatchBytes is the default bound on the record bytes of one
	// shard of one destination, window and pane.
	DefaultMaxBatchBytes = 64 << 20
	// MinMaxBatchBytes and MaxMaxBatchBytes bound Config.MaxBatchBytes. A batch
	// is one element: a worker holds it in memory, and a checkpoint re-sends it.
	// A larger shard is split into several batches through local disk.
	MinMaxBatchBytes = 1 << 10
	MaxMaxBatchBytes = 2 << 30
	// MinMaxFileBytes is the smallest Config.MaxFileBytes accepted.
	MinMaxFileBytes = 1 << 10
	// DefaultCheckpointBytes is the default cap on the spacing of checkpoints,
	// in bytes of records written: as large as a default batch, so that by
	// default time decides (DefaultCheckpointInterval) and a batch written
	// within it never checkpoints.
	DefaultCheckpointBytes = 64 << 20
	// DefaultCheckpointInterval is the default spacing of checkpoints in
	// time: a batch written in less never self-checkpoints, so its element
	// does not go back through the runner.
	DefaultCheckpointInterval = 5 * time.Second
	// MinCheckpointBytes is the smallest Config.CheckpointBytes accepted.
	MinCheckpointBytes = 1 << 10
	// DefaultResumeDelay is how long the writer asks the runner to wait
	// before it resumes a self-checkpointed element.
	DefaultResumeDelay = 10 * time.Millisecond
	// MaxPrefixLen bounds Config.Prefix and Config.StagingPrefix, in bytes,
	// leaving room under S3's 1,024-byte key limit for destinations and names.
	MaxPrefixLen = 512
	// MaxDestinationLen bounds the path a Destination function returns.
	MaxDestinationLen = 256
)

// Values of Config.FinalizeCommit.
const (
	// FinalizeAuto leaves every commit to the commit stage, on every
	// runner, Dataflow included: the partition guarantee holds in full
	// (docs/guarantees.md). It is the default ("" means FinalizeAuto).
	FinalizeAuto = "auto"
	// FinalizeAlways also commits each file at bundle finalization, ahead
	// of the commit stage, on every runner: an explicit opt-in fast path
	// with a weaker partition guarantee (docs/guarantees.md).
	FinalizeAlways = "always"
	// FinalizeNever leaves every commit to the commit stage.
	FinalizeNever = "never"
)

// Config configures Write. The zero value of every field but Bucket means its
// documented default. Validate checks a Config; Write checks it again while
// the pipeline is built.
//
// The settings a stage reads travel inside the pipeline graph to every
// worker, as JSON, visible to whoever can read the job's graph (the runner,
// its UI, its logs): so a Config holds no secret. Credentials and the SSE-C
// key are named (an environment variable, a file) and read on each machine.
type Config struct {
	// Bucket receives the files. Required.
	Bucket string
	// Prefix is the key prefix of every file: files are written at
	// <Prefix>/<destination>/<name>. Empty means the bucket's root. It must
	// not start with '/', and must not hold empty, "." or ".." segments.
	Prefix string
	// StagingPrefix is where the writer keeps the side objects of open files
	// (see the recoverable package). Default ".s3once/staging/". It must not
	// hold the output, and the output's readers must not see it: it may lie
	// under Prefix only below a segment that starts with '.' or '_', which
	// Spark, Hive, Trino and Athena skip.
	StagingPrefix string

	// Connection says where the S3 server is and how to reach it.
	Connection
	// Requests holds what every request carries and the output objects'
	// settings.
	Requests

	// Files says what the files hold and how they are named, sharded,
	// rolled and closed.
	Files
	// Tuning says how the writer batches, checkpoints, uploads and commits,
	// and the memory it may take.
	Tuning
}

// Connection is the part of a Config that says where the S3 server is and
// how to reach it: the endpoint, the region, the credentials' names and
// how calls retry. It is what a client is made from (the sink's, and the
// Iceberg table stage's through Config.AWSConfig); it holds no secret.
type Connection struct {
	// Endpoint is the S3 endpoint URL (http or https, the server's address
	// with no path), for S3-compatible servers; empty means AWS.
	Endpoint string `json:"endpoint,omitempty"`
	// Region of the bucket. Empty means the default chain's region (AWS_REGION,
	// the shared config), else us-east-1.
	Region string `json:"region,omitempty"`
	// PathStyle addresses buckets as <endpoint>/<bucket> instead of
	// <bucket>.<endpoint>; most S3-compatible servers need it.
	PathStyle bool `json:"pathStyle,omitempty"`
	// Credentials names where each machine finds static credentials (an
	// environment variable or a file), never the credentials themselves.
	// The zero value uses the AWS SDK's default chain on each machine
	// (environment, shared files, instance or task role).
	Credentials Credentials `json:"credentials,omitzero"`
	// MaxAttempts is the AWS SDK's retry budget per S3 call. Default: the
	// SDK's (3). Throttling answers (503 SlowDown) are not counted in it:
	// see ThrottleBudget.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// ThrottleBudget is how long one S3 call may go on being answered
	// SlowDown (S3's answer when a prefix takes more requests than it
	// allows) before it fails with an error carrying [s3once:throttled].
	// Until then the call waits and is sent again, on a backoff that all
	// calls of a worker to the same bucket and folder share. A failed run
	// loses nothing and a rerun resumes it. Runs have no deadline
	// (streaming), so the budget is per call. Default: 5 minutes.
	ThrottleBudget time.Duration `json:"throttleBudget,omitempty"`
	// DisableChecksums stops sending CRC64NVME checksums to the server, for
	// servers that reject them. The writer still checks its own.
	DisableChecksums bool `json:"disableChecksums,omitempty"`
}

// Requests is the part of a Config that every S3 request of the sink
// carries (the expected bucket owner, server-side encryption), the
// settings of the objects it creates, and how the bucket keeps versions.
// It holds no secret: an SSE-C key is named by where each machine finds
// it.
type Requests struct {
	// ExpectedBucketOwner, when set, is the 12-digit account ID that must
	// own Bucket: every S3 call carries it, and S3 refuses (403) calls to a
	// bucket of another account, so a typo or a bucket name taken over by
	// someone else never receives the data or the deletes.
	ExpectedBucketOwner string `json:"expectedBucketOwner,omitempty"`
	// Encryption asks for server-side encryption of every object the sink
	// creates (files, side objects, probes, markers): EncryptionSSES3,
	// EncryptionSSEKMS or EncryptionSSEKMSDSSE. Empty leaves it to the
	// bucket's default encryption. KMSKeyID (an ID, ARN or alias; empty
	// means the account's default key) and BucketKey go with SSE-KMS.
	Encryption string `json:"encryption,omitempty"`
	KMSKeyID   string `json:"kmsKeyID,omitempty"`
	BucketKey  bool   `json:"bucketKey,omitempty"`
	// SSECustomerKeyEnv or SSECustomerKeyFile name where every machine
	// (driver and workers) finds the SSE-C key: an environment variable
	// holding its base64, or a file holding its 32 bytes (raw or base64).
	// The key itself never enters the pipeline graph. Every call that
	// writes or reads data carries it. Excludes Encryption.
	SSECustomerKeyEnv  string `json:"sseCustomerKeyEnv,omitempty"`
	SSECustomerKeyFile string `json:"sseCustomerKeyFile,omitempty"`
	// StorageClass, Tags, CacheControl, ContentDisposition and Metadata
	// (user metadata, x-amz-meta-*) are set on every output file when its
	// upload is created. A rerun judges a file by its bytes alone: a file
	// committed with other object settings counts as committed and keeps
	// them.
	StorageClass       string            `json:"storageClass,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	// VersionedBucket says the bucket keeps versions: the clean-up after
	// each commit and the sweep then also remove the old versions and
	// delete markers of s3once's side objects and probes (never of other
	// keys). The preflight refuses a versioned bucket without it.
	VersionedBucket bool `json:"versionedBucket,omitempty"`
}

// Files is the part of Config that says what the files hold and how they
// are named, sharded, rolled and closed. Its zero value writes text lines,
// uncompressed, to one destination in DefaultShards shards, in the latest
// output version, without a completion marker.
type Files struct {
	// Format names the record format (see package format): "text" (the
	// default: strings or []byte, one per line), "jsonl" (any type, one JSON
	// value per line), "csv" ([]string, a format.CSVRecorder, or a struct of
	// plain fields) or "parquet" (see Parquet), or a name the program
	// registered with format.Register.
	Format string

	// Compression names the codec (see package format): "none" (the
	// default), "gzip" or "zstd", or a name the program registered with
	// format.RegisterCodec.
	Compression string

	// Parquet holds the settings of Format "parquet" (see ParquetOptions);
	// Compression must then stay empty.
	Parquet ParquetOptions

	// Destination, when set, picks each record's destination: a path under
	// Prefix such as "country=fr/day=2024-06-01". It is a function of the
	// element, with one of the signatures
	//
	//	func(T) string
	//	func(T) (string, error)
	//	func(beam.Window, T) string
	//	func(beam.Window, T) (string, error)
	//
	// where T is the input's element type. Register it with the register
	// package (register.Function1x1 and friends, in an init function) so
	// workers can find it. Workers find a function by its name: a registered
	// one from the registry, an unregistered one from the symbol table of the
	// worker's own binary (/proc/self/exe). So an unregistered Destination
	// works on prism and on job servers whose workers run an unstripped copy
	// of the program, and fails on a worker whose binary has no symbol table
	// (built with -ldflags=-s): the worker cannot decode the stage and the
	// job fails with "<name> not found. Register DoFns and functions with
	// the beam/register package", before any record is written. The
	// result must be empty or a relative path without empty, "." or ".."
	// segments, at most MaxDestinationLen bytes. Nil means every record goes
	// to the single destination "".
	Destination any

	// Shards is the number of shards per destination, window and pane: each
	// shard is written by one worker, as one or more files. A record's shard
	// is a hash of its bytes, so equal inputs shard equally. Default
	// DefaultShards (4). A shard larger than MaxBatchBytes is spilled to
	// local disk and written as several sub-batches, by the same worker;
	// raise Shards to spread the work. With TargetFileBytes set, Shards is
	// instead the most shards a destination and window get (0 means
	// DefaultMaxAutoShards, 1,000).
	Shards int

	// TargetFileBytes, when set, makes the shard count of each destination
	// and window follow its data: ceil(record bytes / TargetFileBytes)
	// shards, at least 1 and at most Shards, so a small destination gets one
	// file and a large one as many as its size needs. The count is a
	// function of the records alone (their bytes before compression), so a
	// rerun of the same input gets the same counts and names on any runner
	// and with any bundling; it is in each file's name (-of-NNNNN). Shards
	// of a destination average at most TargetFileBytes of records, and a
	// shard's files still roll at MaxFileBytes, which it must not exceed.
	// It costs one more pass over the records (a shuffle of them, and a
	// count of each destination's bytes): see docs/configuration.md.
	// Automatic sharding needs output version 2 and the input's default
	// trigger (with AllowedLateness 0 unless the input is bounded); Write
	// refuses it otherwise. Zero (the default) keeps Shards fixed.
	TargetFileBytes int64

	// MaxFileBytes rolls a file before the record bytes it holds (before
	// compression) would exceed it. Default MaxBatchBytes; at least 1 KiB,
	// at most MaxBatchBytes. A single record larger than MaxFileBytes fails
	// the pipeline.
	MaxFileBytes int64

	// MaxFileRecords rolls a file when it holds this many records. Zero means
	// no limit.
	MaxFileRecords int64

	// CompletionMarker, when set, writes a marker once every file of a
	// window is committed (for bounded input in the global window, once
	// the run's files are): MarkerSuccess, an empty "_SUCCESS" object, or
	// MarkerManifest, a "_SUCCESS" object listing the window's files as
	// JSON lines. Its name and bytes are functions of the window and its
	// files, and it is written once (If-None-Match), as a file is; s3once
	// never deletes it. See the package documentation for its name.
	CompletionMarker string

	// OutputVersion chooses the version of s3once's output: which shard a
	// record lands in, the file names, the encodings, and the objects that
	// describe the output (partition manifests, the settings marker's
	// contents). A file's bytes are a function of the input, the settings
	// and the output version, and a folder keeps the version it was first
	// written with, so that reruns after an upgrade still match. 0 means
	// LatestOutputVersion, for a new folder. 1 is the output of the first
	// releases: files only, no partition manifests, completion markers as
	// they were. 2 adds a manifest per partition and records the
	// libraries' canary digests in the settings marker. A run into a folder
	// of another version is refused before any commit, with the value to
	// set; a folder that holds s3once files but no settings marker is of
	// version 1. Since only a manifest closes a partition where there is
	// no run-wide barrier, version 1 is written only through the barrier:
	// bounded input, and FinalizeCommit other than FinalizeAlways.
	OutputVersion int
}

// Tuning is the part of Config that says how the writer batches,
// checkpoints, uploads and commits, and the memory it may take. Its zero
// value takes every default.
type Tuning struct {
	// MaxBatchBytes bounds the record bytes of one batch, which a worker
	// holds in memory while it writes them. A shard (of one destination,
	// window and pane) larger than that is spilled to local temporary disk
	// (as many bytes as the shard holds) and written as several sub-batches
	// of at most MaxBatchBytes each; a shard too skewed to split (many
	// identical records) fails the pipeline with an error that says so. Default
	// DefaultMaxBatchBytes (64 MiB), at least 1 KiB, at most 2 GiB. A file
	// never holds more than one batch: to get larger files, raise
	// MaxBatchBytes (and MaxFileBytes) or lower Shards.
	MaxBatchBytes int64

	// MaxWorkerMemory bounds the memory that the sink's batches, part
	// buffers and Parquet row groups take together in one worker process,
	// across every Write in it (a process whose Writes set different
	// values keeps the smallest). A batch that does not fit waits or
	// spills to local disk, and a batch the writer cannot take yet goes
	// back to the runner for a while: nothing fails for lack of memory.
	// Default DefaultMaxWorkerMemory (1 GiB, for a worker of 2 GiB); it
	// must hold one batch: MaxBatchBytes twice (the batch and its
	// encoding), or MaxBatchBytes with a file's part buffers (PartSize x
	// (Concurrency + 1)) and, for Parquet, twice RowGroupBytes, whichever
	// is more, plus one more file's part buffers (those a worker keeps for
	// its next file). It changes no file's bytes. docs/configuration.md
	// tells how to size a worker by it.
	MaxWorkerMemory int64

	// CheckpointBytes caps how far the writer gets, in record bytes, between
	// two checkpoints: at each, it makes the open file durable and hands the
	// rest of its work back to the runner (a self-checkpoint), so a failure
	// redoes at most this much (or CheckpointInterval's worth). Each
	// checkpoint sends the rest of the batch back through the runner, so
	// fewer are cheaper. Compressed files also restart their gzip member or
	// zstd frame every min(CheckpointBytes, 1 MiB) of records, whether or not
	// a checkpoint is taken there: that spacing, not where checkpoints fall,
	// is what CheckpointBytes changes in a file's bytes (none at 1 MiB or
	// more). Default 64 MiB (DefaultMaxBatchBytes: a default batch is never
	// cut by bytes), at least 1 KiB.
	CheckpointBytes int64

	// CheckpointInterval also checkpoints once this much time has passed
	// since the writer started on the element, at the next sync point (every
	// min(CheckpointBytes, 1 MiB) of records, see CheckpointBytes). Default
	// DefaultCheckpointInterval (5 s); negative: bytes alone decide. Where
	// checkpoints fall never changes a file's bytes.
	CheckpointInterval time.Duration

	// ResumeDelay is the delay the writer asks for when it checkpoints.
	// Default DefaultResumeDelay.
	ResumeDelay time.Duration

	// FinalizeCommit chooses whether the writer also commits each file at
	// bundle finalization (the fast path), ahead of the commit stage (which
	// commits every file in any case): FinalizeAlways, FinalizeNever, or
	// FinalizeAuto (the default), which is FinalizeNever on every runner.
	// FinalizeAlways commits before any run-wide barrier could look at the
	// folder: the settings marker is still checked before any commit, but
	// a changed rerun may leave a partition holding files of both runs,
	// which s3once verify names (docs/guarantees.md). Prism sends a
	// finalization request after every bundle of a stage that asks for it,
	// and Beam Go's harness logs an ERROR line for each bundle it did not
	// expect one for; Flink and Spark do not run the callbacks. In builds
	// with the race detector, FinalizeAlways acts as FinalizeNever (see
	// the package documentation). FinalizeAlways needs output version 2.
	FinalizeCommit string

	// PartSize, Concurrency and InlineTailMax tune each file's multipart
	// upload; see recoverable.Options for their defaults and bounds. A
	// worker holds PartSize x (Concurrency + 1) bytes of buffers per file it
	// writes, on top of the batch.
	PartSize      int64
	Concurrency   int
	InlineTailMax int
}

// settings is a Config checked and with its defaults filled in: the one
// source every stage's settings come from. Write builds it once, on the
// driver. It is made of the parts the DoFns carry, each part the whole of
// what its DoFns read, so a DoFn's type says what it reads and no field is
// copied by hand: folder (every DoFn that reaches the bucket), and
// writerSettings (the writer: its folder, fileSettings and writerTuning).
// The fields of settings itself shape the graph on the driver (shards,
// batches, when files commit) and reach no worker. Fields are exported for
// the JSON encoding of DoFns.
type settings struct {
	writerSettings

	Shards int `json:"shards,omitempty"`
	// TargetFileBytes is Config.TargetFileBytes: 0 for fixed Shards, else
	// automatic sharding with Shards as its bound (autoshard.go).
	TargetFileBytes int64 `json:"targetFileBytes,omitempty"`
	MaxBatchBytes   int64 `json:"maxBatchBytes,omitempty"`
	// FinalizeCommit is FinalizeAlways or FinalizeNever: FinalizeAuto is
	// resolved while the pipeline is built.
	FinalizeCommit string `json:"finalizeCommit,omitempty"`
}

// folder is what every DoFn that reaches the bucket reads: where the files
// are, how the client reaches S3 (client.go), what every request carries,
// and the folder's output version.
type folder struct {
	Bucket        string `json:"bucket,omitempty"`
	Prefix        string `json:"prefix,omitempty"`
	StagingPrefix string `json:"stagingPrefix,omitempty"`

	// Connection is how the client reaches S3 (client.go).
	Connection

	Requests requestSettings `json:"requests,omitzero"`

	// OutputVersion is 1 or 2: 0 is resolved to LatestOutputVersion.
	OutputVersion int `json:"outputVersion,omitempty"`
}

// fileSettings decide a file's bytes and where it rolls.
type fileSettings struct {
	Format      string           `json:"format,omitempty"`
	Compression string           `json:"compression,omitempty"`
	Parquet     *parquetSettings `json:"parquet,omitempty"`

	MaxFileBytes   int64 `json:"maxFileBytes,omitempty"`
	MaxFileRecords int64 `json:"maxFileRecords,omitempty"`
}

// writerTuning is how the writer checkpoints and uploads a file, and the
// memory it may take.
type writerTuning struct {
	CheckpointBytes    int64         `json:"checkpointBytes,omitempty"`
	CheckpointInterval time.Duration `json:"checkpointInterval,omitempty"`
	ResumeDelay        time.Duration `json:"resumeDelay,omitempty"`

	PartSize      int64 `json:"partSize,omitempty"`
	Concurrency   int   `json:"concurrency,omitempty"`
	InlineTailMax int   `json:"inlineTailMax,omitempty"`

	// MaxWorkerMemory is Config.MaxWorkerMemory (membudget.go).
	MaxWorkerMemory int64 `json:"maxWorkerMemory,omitempty"`
}

// writerSettings is what the writer (writeFilesFn) reads.
type writerSettings struct {
	folder
	fileSettings
	writerTuning
}

// Validate reports every problem of c in one error wrapping ErrInvalidConfig.
// It checks what can be checked without the input: the element type is
// checked against Format and Destination by TryWrite.
func (c Config) Validate() error {
	_, err := c.settings()
	return err
}

// partCheckBucket stands in for Bucket when a part alone is validated.
const partCheckBucket = "s3once-part-check"

// Validate reports every problem of the connection, checked with every
// other part of Config at its defaults, in one error wrapping
// ErrInvalidConfig; Config.Validate checks the parts together.
func (c Connection) Validate() error {
	return Config{Bucket: partCheckBucket, Connection: c}.Validate()
}

// Validate reports every problem of the request settings, as
// Connection.Validate does.
func (r Requests) Validate() error { return Config{Bucket: partCheckBucket, Requests: r}.Validate() }

// Validate reports every problem of the file settings, as
// Connection.Validate does. The element type is checked against Format
// and Destination by TryWrite.
func (f Files) Validate() error { return Config{Bucket: partCheckBucket, Files: f}.Validate() }

// Validate reports every problem of the tuning, as Connection.Validate
// does.
func (t Tuning) Validate() error { return Config{Bucket: partCheckBucket, Tuning: t}.Validate() }

// settings validates c and returns it with defaults filled in.
func (c Config) settings() (settings, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	s := settings{
		writerSettings: writerSettings{
			folder: folder{
				Bucket: c.Bucket, Prefix: strings.TrimSuffix(c.Prefix, "/"), StagingPrefix: c.StagingPrefix,
				Connection: c.Connection, OutputVersion: c.OutputVersion,
			},
			fileSettings: fileSettings{Format: c.Format, Compression: c.Compression, MaxFileBytes: c.MaxFileBytes, MaxFileRecords: c.MaxFileRecords},
			writerTuning: writerTuning{
				CheckpointBytes: c.CheckpointBytes, CheckpointInterval: c.CheckpointInterval, ResumeDelay: c.ResumeDelay,
				PartSize: c.PartSize, Concurrency: c.Concurrency, InlineTailMax: c.InlineTailMax,
				MaxWorkerMemory: c.MaxWorkerMemory,
			},
		},
		Shards: c.Shards, TargetFileBytes: c.TargetFileBytes, MaxBatchBytes: c.MaxBatchBytes,
		FinalizeCommit: c.FinalizeCommit,
	}

	if err := checkBucket(s.Bucket); err != nil {
		bad("%v", err)
	}
	if err := checkPath("Prefix", s.Prefix, MaxPrefixLen); err != nil {
		bad("%v", err)
	}
	s.StagingPrefix = s3call.StagingPrefix(s.StagingPrefix)
	if err := checkPath("StagingPrefix", strings.TrimSuffix(s.StagingPrefix, "/"), MaxPrefixLen); err != nil {
		bad("%v", err)
	} else if s.StagingPrefix == "/" {
		bad("StagingPrefix must not be empty")
	} else if err := checkStagingApart(s.Prefix, s.StagingPrefix); err != nil {
		bad("%v", err)
	}

	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("Endpoint %q must be an http:// or https:// URL", s.Endpoint)
		} else if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			// The SDK would put the path before every bucket and key, and
			// the server answer with errors that never name it.
			bad("Endpoint %q has a path: give the server's address alone, %s://%s; the bucket goes in Bucket and the folder in Prefix", s.Endpoint, u.Scheme, u.Host)
		}
	}
	for _, pr := range s.Credentials.problems() {
		bad("%s", pr)
	}
	if s.MaxAttempts < 0 {
		bad("MaxAttempts %d must not be negative", s.MaxAttempts)
	}
	if s.ThrottleBudget == 0 {
		s.ThrottleBudget = s3call.DefaultThrottleBudget
	}
	if s.ThrottleBudget < time.Second || s.ThrottleBudget > 24*time.Hour {
		bad("ThrottleBudget %v must be in [1s, 24h] (0 means %v)", s.ThrottleBudget, s3call.DefaultThrottleBudget)
	}

	if s.Format == "" {
		s.Format = "text"
	}
	if _, err := format.Lookup(s.Format); err != nil {
		bad("%v", err)
	}
	if s.Compression == "" {
		s.Compression = "none"
	}
	if _, err := format.LookupCodec(s.Compression); err != nil {
		bad("%v", err)
	}
	problems = append(problems, s.applyParquet(c.Parquet)...)

	switch {
	case s.TargetFileBytes < 0:
		bad("TargetFileBytes %d must not be negative (0 means fixed Shards)", s.TargetFileBytes)
	case s.TargetFileBytes > 0 && s.Shards == 0:
		s.Shards = DefaultMaxAutoShards
	case s.Shards == 0:
		s.Shards = DefaultShards
	}
	if s.Shards < 1 || s.Shards > MaxShards {
		bad("Shards %d must be in [1, %d] (0 means %d)", s.Shards, MaxShards, DefaultShards)
	}
	if s.MaxBatchBytes == 0 {
		s.MaxBatchBytes = DefaultMaxBatchBytes
	}
	batchOK := s.MaxBatchBytes >= MinMaxBatchBytes && s.MaxBatchBytes <= MaxMaxBatchBytes
	if !batchOK {
		bad("MaxBatchBytes %d must be in [%d, %d]", s.MaxBatchBytes, MinMaxBatchBytes, int64(MaxMaxBatchBytes))
	}
	if s.MaxFileBytes == 0 {
		s.MaxFileBytes = s.MaxBatchBytes
	}
	switch {
	case s.MaxFileBytes < MinMaxFileBytes:
		bad("MaxFileBytes %d is too small: at least %d bytes", s.MaxFileBytes, MinMaxFileBytes)
	case batchOK && s.MaxFileBytes > s.MaxBatchBytes:
		bad("MaxFileBytes %d exceeds MaxBatchBytes %d: a file never holds more than one batch, so raise MaxBatchBytes too", s.MaxFileBytes, s.MaxBatchBytes)
	}
	if s.MaxFileRecords < 0 {
		bad("MaxFileRecords %d must not be negative (0 means no limit)", s.MaxFileRecords)
	}
	if s.TargetFileBytes > 0 {
		switch {
		case s.TargetFileBytes < MinMaxFileBytes:
			bad("TargetFileBytes %d is too small: at least %d bytes (0 means fixed Shards)", s.TargetFileBytes, MinMaxFileBytes)
		case s.MaxFileBytes >= MinMaxFileBytes && s.TargetFileBytes > s.MaxFileBytes:
			bad("TargetFileBytes %d exceeds MaxFileBytes %d: files roll at MaxFileBytes, so raise MaxFileBytes (and MaxBatchBytes) too", s.TargetFileBytes, s.MaxFileBytes)
		}
	}

	if s.CheckpointBytes == 0 {
		s.CheckpointBytes = DefaultCheckpointBytes
	}
	if s.CheckpointBytes < MinCheckpointBytes {
		bad("CheckpointBytes %d is too small: at least %d bytes", s.CheckpointBytes, MinCheckpointBytes)
	}
	if s.CheckpointInterval == 0 {
		s.CheckpointInterval = DefaultCheckpointInterval
	}
	if s.ResumeDelay == 0 {
		s.ResumeDelay = DefaultResumeDelay
	}
	if s.ResumeDelay < 0 || s.ResumeDelay > time.Hour {
		bad("ResumeDelay %v must be in (0, 1h]", s.ResumeDelay)
	}

	if s.OutputVersion == 0 {
		s.OutputVersion = LatestOutputVersion
	}
	if s.OutputVersion < 1 || s.OutputVersion > LatestOutputVersion {
		bad("OutputVersion %d must be 1 or %d (0 means %d, for a new folder)", s.OutputVersion, LatestOutputVersion, LatestOutputVersion)
	} else if s.TargetFileBytes > 0 && s.OutputVersion < 2 {
		bad("TargetFileBytes needs output version 2 (OutputVersion %d writes fixed Shards only)", s.OutputVersion)
	} else if s.FinalizeCommit == FinalizeAlways && s.OutputVersion < 2 {
		bad("FinalizeCommit %q needs output version 2: output version 1 keeps no partition manifests, so nothing would keep a changed rerun's files out of a partition it commits before the run-wide barrier (use %q, or OutputVersion 2 in a fresh Prefix)", FinalizeAlways, FinalizeAuto)
	}

	var reqProblems []string
	s.Requests, reqProblems = c.requestSettings()
	problems = append(problems, reqProblems...)

	if mode, err := finalizeMode(s.FinalizeCommit, finalizeSupported); err != nil {
		bad("%v", err)
	} else {
		s.FinalizeCommit = mode
	}

	// The recoverable package owns the bounds of its options.
	if err := s.streamOptions().Validate(); err != nil {
		// Its problems, without its own code: this error carries the
		// configuration's.
		bad("%s", strings.TrimPrefix(err.Error(), recoverable.ErrInvalidOptions.Error()+": "))
	} else if batchOK {
		if s.MaxWorkerMemory == 0 {
			s.MaxWorkerMemory = DefaultMaxWorkerMemory
		}
		if need := s.batchMemory(); s.MaxWorkerMemory < need {
			bad("MaxWorkerMemory %d cannot hold one batch with its files' buffers, which takes %d bytes (%s): raise MaxWorkerMemory to at least that, or lower MaxBatchBytes, PartSize or Concurrency",
				s.MaxWorkerMemory, need, s.batchMemoryParts())
		}
	}

	if len(problems) > 0 {
		return settings{}, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return s, nil
}

func (s writerSettings) streamOptions() recoverable.Options {
	return recoverable.Options{
		PartSize:         s.PartSize,
		Concurrency:      s.Concurrency,
		InlineTailMax:    s.InlineTailMax,
		StagingPrefix:    s.StagingPrefix,
		DisableChecksums: s.DisableChecksums,
	}
}

// finalizeMode resolves Config.FinalizeCommit to FinalizeAlways or
// FinalizeNever: FinalizeAuto is FinalizeNever on every runner, Dataflow
// included, since a file committed at finalization escapes the run-wide
// barrier. supported is
// false in builds with the race detector, where it is always FinalizeNever.
func finalizeMode(setting string, supported bool) (string, error) {
	switch setting {
	case "", FinalizeAuto:
		setting = FinalizeNever
	case FinalizeAlways, FinalizeNever:
	default:
		return "", fmt.Errorf("FinalizeCommit %q must be %q, %q or %q (empty means %q)", setting, FinalizeAuto, FinalizeAlways, FinalizeNever, FinalizeAuto)
	}
	if !supported {
		return FinalizeNever, nil
	}
	return setting, nil
}

// syncBytes is the spacing of sync points in a file, in record bytes: where
// a compressed member ends and a checkpoint may be taken.
func (s writerTuning) syncBytes() int64 { return min(s.CheckpointBytes, 1<<20) }

// checkBucket checks a bucket name against S3's naming rules, as far as
// every existing bucket follows them: 3 to 255 characters (63 for buckets
// made since 2018; older ones in us-east-1 may have up to 255, upper case and
// underscores), letters, digits, '.', '-' and '_', starting and ending with a
// letter or a digit, no "..", and not an IPv4 address. A name outside them cannot be a bucket, so it is
// refused here, in one line, before any S3 call.
func checkBucket(b string) error {
	switch {
	case b == "":
		return errors.New("Bucket is required")
	case strings.ContainsAny(b, "/:"):
		return fmt.Errorf("Bucket %q must be a bucket name, not a path or URL", b)
	case len(b) < 3 || len(b) > 255:
		return fmt.Errorf("Bucket %q is %d characters long; bucket names have 3 to 63 (255 for some older buckets)", b, len(b))
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("Bucket %q holds %q; bucket names have lower-case letters, digits, '.' and '-' only", b, c)
		}
	}
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	switch {
	case !alnum(b[0]) || !alnum(b[len(b)-1]):
		return fmt.Errorf("Bucket %q must start and end with a letter or a digit", b)
	case strings.Contains(b, ".."):
		return fmt.Errorf("Bucket %q holds \"..\"; bucket names never do", b)
	case net.ParseIP(b) != nil:
		return fmt.Errorf("Bucket %q is an IP address, not a bucket name", b)
	}
	return nil
}

// checkPath checks a key prefix or a destination: empty, or segments joined
// by '/' that are neither empty nor "." nor "..", in valid UTF-8 without
// control characters.
func checkPath(what, p string, maxLen int) error {
	if p == "" {
		return nil
	}
	switch {
	case len(p) > maxLen:
		return fmt.Errorf("%s is %d bytes long, at most %d allowed", what, len(p), maxLen)
	case !utf8.ValidString(p):
		return fmt.Errorf("%s %q is not valid UTF-8", what, p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s %q must not start with '/'", what, p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s %q holds a control character", what, p)
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%s %q has an empty segment", what, p)
		case ".", "..":
			return fmt.Errorf("%s %q has a %q segment", what, p, seg)
		}
	}
	return nil
}

// checkStagingApart checks that the staging prefix neither holds the output
// nor sits where the output's readers look; the sweep applies the same rule
// (ownkeys.CheckStagingApart).
func checkStagingApart(prefix, staging string) error {
	return ownkeys.CheckStagingApart(prefix, staging)
}
