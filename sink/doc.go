// Package sink is s3once's Beam transform: it writes a PCollection to S3 as
// files, exactly once, sharded, per destination and per window, in batch and
// streaming pipelines.
//
//	files := sink.Write(s, records, sink.Config{
//		Bucket: "my-bucket",
//		Prefix: "events",
//		Files: sink.Files{
//			Format:      "jsonl",
//			Compression: "gzip",
//			Destination: eventDay, // func(Event) string, registered with register.Function1x1
//		},
//	})
//
// Write returns a PCollection<FileResult> with one element per committed file,
// so a pipeline can go on from there (record the files in a catalog, notify a
// consumer, ...). A FileResult can arrive more than once (Beam retries
// bundles): key on (Bucket, Key). It is in the window its records came
// from, except for bounded input, where the run-wide barrier puts every
// FileResult in the global window; its Window and Pane fields always name
// the file's window and pane.
//
// # What it guarantees
//
// Every record is in exactly one committed file; a file is exactly the bytes
// written to it (size and CRC64NVME checked after every commit); no reader
// sees a half-written file. A file's name and bytes are functions of its
// records, the byte-affecting settings and the folder's output version, so a
// retried bundle or a rerun writes the same bytes under the same names and
// the conditional, verified commit keeps one copy.
//
// A partition (the files of one destination and window under Prefix) that a
// run writes holds exactly that run's files. For bounded input a run-wide
// barrier checks, before any commit, the folder's settings marker, every
// partition the run writes, and every key: a rerun that would change the
// folder commits nothing and fails with ErrSettingsChanged,
// ErrPartitionChanged or committer.ErrKeyTaken, each naming what differs
// and what to do; a settings marker that lacks a setting its format and
// compression require (cut, or edited) is ErrSettingsDamaged. Partitions a run does not write are left alone, so new
// destinations may be appended to a Prefix. The exact scope, unbounded
// input and FinalizeCommit "always" included: docs/guarantees.md
// (Partitions). How and why: docs/design.md.
//
// # Stages
//
//  1. Encode formats each element as a record (Format), picks its
//     destination (Config.Destination) and its shard (a hash of the record).
//     With TargetFileBytes, the shard count of each destination and window
//     follows from its record bytes first: a sum per destination, joined
//     to the records (a CoGroupByKey), never a side input (autoshard.go).
//  2. A GroupByKey gathers each (destination, shard) per window and pane.
//  3. Batch sorts a group's records into batches of at most MaxBatchBytes;
//     a larger group spills to local disk and becomes sub-batches.
//  4. WriteFiles, a splittable DoFn, writes each batch as files, each a
//     multipart upload (package recoverable), checkpointing itself with
//     the open file's token in its residual.
//  5. For bounded input, the barrier (above).
//  6. Commit completes each upload (package committer), idempotently.
//  7. Output version 2 writes each partition's manifest once all its files
//     are committed, then the window's completion marker, if asked for,
//     and then emits the window's files whole (WriteWindows returns them).
//
// # Names
//
// Files are named
//
//	<Prefix>/<destination>/<window>-pane-<pane>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF><suffix>
//
// where <window> is "global" or the window's bounds in UTC
// ("20240601T100000Z-20240601T110000Z"), the -batch- part appears for a
// shard split into sub-batches, and <suffix> is the format's extension
// followed by the codec's (".jsonl.gz"). No file is ever empty. Beside the
// files s3once writes objects whose names start with '_', which Spark,
// Hive, Trino, Athena and DuckDB skip: the folder's settings marker
// (<Prefix>/_s3once_settings), each partition's manifest
// (<Prefix>/<destination>/_s3once_manifest-<window>, JSON Lines: key, size,
// CRC64NVME and records of every file) and, with CompletionMarker, one
// "_SUCCESS" marker per window.
//
// # Output versions
//
// Config.OutputVersion fixes what a run writes for given records and
// settings: version 2 (the default for a new folder) shards by XXH64 with a
// fixed seed (balanced for any record shape) and writes partition
// manifests; version 1 is the first
// releases' output. A folder keeps the version it was first written with:
// a run of another version is refused before any commit with the value to
// set, and a folder with s3once files but no settings marker is of
// version 1 (set OutputVersion: 1 to go on writing it).
//
// # Commit
//
// The commit stage commits every file, on every runner and after every
// retry. FinalizeCommit "always" also commits each file at bundle
// finalization, ahead of it, with a weaker partition guarantee; the
// default, "auto", never does (see Config.FinalizeCommit).
//
// # Configuration and workers
//
// Write checks the Config and the input's type while the pipeline is built,
// and panics with the problem, as Beam's own transforms do; TryWrite
// returns it as an error, Config.Validate checks a Config alone, and
// Preflight checks the bucket, the credentials and the folder before the
// pipeline runs. Each stage carries into the pipeline graph only the
// settings it reads; the writer and the commit stages carry the connection,
// whose credentials are references (environment variable names, a file,
// a profile) that each worker resolves in its Setup, never the secrets.
// Formats and codecs are chosen by name
// (package format): a custom one must be registered (format.Register,
// format.RegisterCodec) in an init function, which runs on every worker; a
// Destination must be a top-level function registered with the register
// package.
//
// Format "parquet" writes Go structs as Apache Parquet files with
// github.com/parquet-go/parquet-go, one column per field, from its struct
// tags; maps, interfaces, channels, functions, complex numbers, arrays
// other than byte arrays and recursive types are refused while the
// pipeline is built, naming the field (Config.Parquet for its settings).
//
// # Memory and disk
//
// A worker holds, per bundle it processes, one batch (MaxBatchBytes), an
// index of 24 bytes per record, and the open file's part buffers
// (PartSize x (Concurrency + 1)); a shard larger than MaxBatchBytes goes to
// local disk (TMPDIR) while it is gathered. Lower MaxBatchBytes where a
// worker's memory is tight, raise Shards for parallelism.
//
// # Metrics
//
// Counters in the "s3once" namespace count records, bytes, parts, files
// closed and committed, checkpoints and resumes, retries and rewrites, the
// barrier's files, manifests, and throttled calls; docs/operating.md
// (Metrics) says what each counts. Counters of failed bundles are dropped
// by the runner.
//
// # Left-overs
//
// A crashed or retried attempt can leave a multipart upload no token names
// and side objects under StagingPrefix. Readers never see them, and
// committer.Sweep (s3once sweep) removes them; an
// AbortIncompleteMultipartUpload lifecycle rule is the backstop. s3once
// verify proves a folder against its manifests.
//
// Further reading: docs/design.md ("The sink in depth": each stage, the
// barrier, checkpoints, restored checkpoints, memory and spilling, Parquet,
// windows and panes, the settings marker, encodings that outlive a build,
// bucket settings), docs/configuration.md and docs/guarantees.md.
package sink
