// Package sink is s3once's Beam transform: it writes a PCollection to S3 as
// files, exactly once, sharded, per destination and per window, in batch and
// streaming pipelines.
//
//	files := sink.Write(s, records, sink.Config{
//		Bucket:      "my-bucket",
//		Prefix:      "events",
//		Format:      "jsonl",
//		Compression: "gzip",
//		Destination: eventDay, // func(Event) string, registered with register.Function1x1
//	})
//
// Write returns a PCollection<FileResult> with one element per committed file,
// so a pipeline can go on from there (record the files in a catalog, notify a
// consumer, ...). A FileResult is in the window its records came from, except
// where the run-wide barrier applies (bounded input: see "Reruns" below),
// which puts every FileResult in the global window; its Window and Pane
// fields always name the file's window and pane.
//
// # What happens to the records
//
//  1. Encode formats each element as a record (its bytes, terminator
//     included; see Format), picks its destination (Config.Destination) and
//     its shard, a hash of the record's bytes (see "Shards" below).
//     In the global window with the default trigger, it packs the records
//     of a bundle per (destination, shard) into packs of up to 1 MiB, so the
//     runner shuffles a few large elements rather than one per record;
//     elsewhere (other windows, or a trigger, which might count elements)
//     each record is a pack of its own. Packing never changes a file's
//     bytes.
//  2. A GroupByKey gathers the packs of each (destination, shard), per
//     window and pane.
//  3. Batch sorts each group's records bytewise into one element, a batch;
//     a group larger than MaxBatchBytes becomes several (see below).
//  4. WriteFiles, a splittable DoFn, writes each batch as one or more files,
//     each a multipart upload (see the recoverable package), and closes them.
//  5. Each closed file's commit token goes through a Reshuffle to Commit,
//     which completes the upload (see the committer package) and emits the
//     file's FileResult.
//
// # Exactly once
//
// A file's name and its bytes are functions of the records it holds: its name
// comes from (destination, window, pane, shard, sub-batch, file index), its
// records are sorted, its shard and sub-batch are hashes of its records, and
// it rolls at places decided by the records alone (their sizes and count). A retried bundle or a rerun of
// the whole pipeline therefore writes the same bytes under the same names, and
// the commit, which is conditional (If-None-Match) and verified (size and
// CRC64NVME of the whole object), keeps exactly one copy. A rerun that would
// put other bytes under a name (the input or the configuration changed) fails
// loudly with committer.ErrKeyTaken instead of leaving two versions (see
// "Reruns" below for when that happens before anything is committed). Bytes
// depend on Format, Compression, Shards, MaxFileBytes, MaxFileRecords, the
// output version (Config.OutputVersion) and, for
// compressed files below 1 MiB, CheckpointBytes (the spacing of sync points,
// min(CheckpointBytes, 1 MiB)); not on CheckpointInterval, nor on where
// checkpoints fall, which only choose among the sync points (the defaults
// changed from 16 MiB by bytes to 5 s by time with a 64 MiB cap without
// changing a byte: both caps are above 1 MiB); compressed bytes may also
// change with the version of the compression library, so keep versions fixed
// between a run and its reruns.
//
// A FileResult can reach downstream transforms more than once: Beam retries
// bundles, and the commit stage may run again for a file it already
// committed. Consumers should key on (Bucket, Key), which names the file
// uniquely; the other fields of two results with the same key are equal.
//
// # Reruns: one barrier before any commit
//
// For bounded input, in the global window or any other, Write puts a barrier
// between the writer and the commit stage: a GroupByKey on one key gathers
// the commit tokens of every file of the run, and the barrier looks at every
// file's key (HEAD, and a read-back where the server keeps no full-object
// CRC64NVME) before any file is committed. If each key is free or already
// holds the file's bytes, the files go on to the commit stage (those found
// in place are "kept from an earlier run": the barrier_kept metric). If any
// key holds other bytes, the run's input or byte-affecting settings differ
// from the run that wrote the folder: the barrier commits nothing, aborts
// every upload of the run (its own, never completed), deletes their side
// objects, and fails with committer.ErrKeyTaken, so the folder stays exactly
// as the earlier run left it. The advice is a fresh Prefix when the input or
// the settings change.
//
// Windowed bounded input goes through the same one barrier. The tokens move
// into the global window before the GroupByKey: every window of bounded
// input ends, so the global window's single pane fires once the whole writer
// stage is done, and holds the files of every window. A barrier per window
// would not do: an early window's files would be committed before a later
// window's keys were looked at. Nothing after the barrier needs the Beam
// window: a file's window and pane are in its name and in its FileResult
// (Window, Pane), the commit stage reads only the token, and the completion
// markers group the results by their Window field. The price is that, from
// the barrier on, the files and their FileResults are in the global window
// (with the global window's end as timestamp). Putting them back into their
// windows was set aside: they reach that point only after the watermark has
// passed every window, so a GroupByKey downstream (the markers', or the
// user's) would drop them as late data. Waiting on the barrier through a
// side input instead, with the tokens left in their windows, was set aside
// too: a runner may run a stage before a global-window side input is
// complete (prism does, going by watermarks alone), which would commit files
// the barrier has not seen. A pipeline that groups FileResults by window
// keys them on the Window field.
//
// The barrier costs one HEAD per file (16 at a time) on one worker, which
// also holds every token of the run (each well under 1 KiB), and a stage
// that waits for the whole writer stage to end; BENCHMARKS.md measures it.
// It cannot hold where the run has no end, or where commits come first:
//
//   - Unbounded input: there is no end of the run to wait for, and a
//     window's files are committed as the window closes.
//   - FinalizeCommit "always" (and "auto" on Dataflow) commits files at
//     bundle finalization, before any barrier could run.
//
// There a changed rerun is refused file by file: every commit is
// conditional (If-None-Match) and verified (size and CRC64NVME), so no
// file is ever replaced, and the first key that holds other bytes fails the
// run with committer.ErrKeyTaken. Files committed before that stay, so the
// folder may then hold files of both runs. Which guarantee a Write has is
// logged at INFO while the pipeline is built, once per Write ("refused
// before any file is committed (run-wide barrier)", or "refused file by
// file at commit"), with the reason.
//
// Which pipeline a Write belongs to and whether its input is bounded are
// read from Beam's unexported fields (beam.Scope's graph, beam.PCollection's
// node); a Beam release that renames them turns the barrier, and the check
// below, off rather than guessing.
//
// # One folder, one sink
//
// Two Writes of one pipeline must not share a folder: their files would mix,
// and the second's commits would meet the first's names. TryWrite refuses,
// with ErrFoldersOverlap (and ErrInvalidConfig), a Write whose Prefix is the
// same folder as, holds, or lies inside the Prefix of an earlier Write of the
// same pipeline in the same bucket, or whose StagingPrefix lies where that
// Write's output is (or the other way round); a shared StagingPrefix is
// fine. The check runs while the pipeline is built, so nothing is written.
// Beam Go's Scope exposes no pipeline identity, so the sink keeps the
// folders of each pipeline's Writes keyed by a weak pointer to the
// pipeline's graph: pipelines built one after another in one process (as
// tests do) never see each other's folders, and a dropped pipeline takes
// its entry with it. Other designs were set aside: an API taking several
// Configs at once would not catch two Writes in different parts of a
// program, a check in Preflight would miss programs that skip it, and a
// claim object per prefix written with If-None-Match would refuse every
// rerun, or need leases and clean-up of its own. The check is per pipeline:
// two programs writing one folder at once are refused only file by file, at
// commit.
//
// # Shards
//
// A record's shard is a hash of its bytes, so equal records shard equally on
// every worker and every rerun. The hash is part of the output version:
//
//   - Version 2 (the default for a new folder) takes XXH64 of the record
//     with a fixed seed and maps it to [0, Shards) by multiply-shift (the
//     high 64 bits of hash times Shards). Every bit of the hash depends on
//     every byte of the record, so records that repeat a field, fixed-width
//     records and records that differ in one byte spread as evenly as random
//     ones: over 40,000 records of each shape the tests try, the largest
//     shard holds at most 1.05 times its even share at 4 and 16 shards, and
//     none is empty. XXH64 is specified to the byte, so the shard does not
//     depend on the process, the build or the machine.
//   - Version 1 took FNV-64a modulo Shards. Its low bits depend only on the
//     low bits of each byte, so with a power-of-two Shards, JSON that repeats
//     an id ({"user":"u1","email":"u1@example.com"}) left half the shards
//     empty and put 2.5 times its share in one of 4 (4.3 times in one of 16).
//     It stays, byte for byte, for folders written by version 1
//     (OutputVersion: 1).
//
// The sub-batch hash (see "Sizes and memory") is another function, so a
// shard's records spread over every sub-batch whatever the version.
//
// # The writer and its checkpoints
//
// WriteFiles' element is a batch; its restriction is the range of records
// still to write plus, when a file is open, the file's resume token (encoded
// with the coder package) and its size so far. Every min(CheckpointBytes,
// 1 MiB) of records within a file is a sync point, and so is every file end:
// compressed files end a gzip member or zstd frame there, so a file is a
// concatenation of complete members whether or not a checkpoint happened. At a
// sync point, once CheckpointInterval (default 5 s) or CheckpointBytes of
// records (default 64 MiB, a cap) have gone by since the writer started on
// the element, it persists the open file,
// arms its restriction tracker with the residual (the remaining records and
// the token) and returns sdf.ResumeProcessingIn: the runner's TrySplit(0)
// takes the residual, checkpoints it, and resumes it later, maybe on another
// worker, which recovers the file from the token, tail included, and goes on.
// Every other split the runner asks for is refused (a nil residual and a nil
// error), since only the writer can make a token, at a point it chooses. The
// initial restriction is never split either: the files of a batch are written
// in order by one worker, so that where they roll does not depend on how the
// runner splits.
//
// # Commit: the fast path and the guarantee
//
// Every closed file's commit token goes to the commit stage, which commits
// it, idempotently (the guarantee: it runs on every runner and after every
// retry). Config.FinalizeCommit decides whether the writer also commits each
// file in a bundle-finalization callback, as soon as the runner has made the
// bundle's output durable (the fast path). Two writer DoFns lie behind it:
// one whose ProcessElement takes a beam.BundleFinalization, which makes the
// runner finalize its bundles, and one that does not. Whichever commit comes
// first completes the upload; the other finds the object in place with the
// expected size and checksum and only verifies it (the
// "commits_already_done" metric). A callback never reports a failure, it
// logs it: the commit stage will commit the file.
//
// FinalizeAuto, the default, finalizes only when the pipeline's --runner flag
// names Dataflow, which finalizes a bundle only when the worker asks for it.
// Elsewhere the fast path costs more than it gives, with Beam Go v2.77:
//
//   - The SDK harness runs the callbacks of a plan's first finalized bundle
//     only: Plan.Finalize gives the plan a new finalizer while its DoFns keep
//     the old one, so later callbacks are never run and stay reachable as
//     long as the plan. The finalizing writer therefore registers callbacks
//     only until one of its own has run (one DoFn instance per plan); after
//     that, the commit stage alone commits that instance's files.
//   - Prism, the embedded runner, sends a finalization request after every
//     bundle of a stage that asks for finalization, and the harness logs an
//     ERROR line ("couldn't find plan in finalizing map") for each bundle
//     that registered nothing, or whose plan was finalized before. A good
//     run would log dozens; on prism, FinalizeAuto uses the writer that does
//     not ask, and a run logs none.
//   - Flink and Spark do not run the callbacks at all.
//   - The harness's finalization handler updates shared tables without the
//     lock its other handlers take. Builds with the race detector never ask
//     for finalization, whatever FinalizeCommit says, so that a program's
//     race-enabled tests do not trip over the SDK.
//
// Fewer commits at finalization also means fewer completions of one upload
// racing each other (the committer handles them, but each costs calls).
//
// # Restored checkpoints whose files were committed
//
// A runner that recovers by restoring its last completed checkpoint and
// replaying from there (Flink does) can hand the writer a residual whose
// token names an upload that the commit stage has completed since, or
// whose side object the commit's clean-up removed. When recovering a
// token fails because its upload or tail is gone or altered
// (recoverable.ErrNoSuchUpload, ErrSideObjectMissing, ErrTailCorrupt,
// ErrPartsChanged), the writer writes the file again from its first record
// (the restriction's Start minus FileRecords), under a new upload, with the
// same sync points, and goes on from there; it logs a warning and counts the
// file in "files_rewritten". A file's bytes are a function of its records, so
// the commit then finds the file already committed, or fails with
// committer.ErrKeyTaken if the bytes differ. Transient failures (network,
// throttling, timeouts) never cause a rewrite: the bundle fails and the
// runner retries it. The rewrite costs one file's worth of writing, at most
// MaxFileBytes.
//
// # Sizes and memory
//
// A worker holds a whole batch in memory while it writes it (a checkpoint's
// residual carries the batch again, so batches must be elements), and
// MaxBatchBytes bounds a batch. A shard (of one destination, window and pane)
// of at most MaxBatchBytes of records is one batch. The GroupByKey hands a
// shard's records over once, so a larger shard goes to local disk: as soon as
// its records pass MaxBatchBytes, Batch writes them, and the rest as they
// come, to 64 bucket files under a new directory in os.TempDir (TMPDIR),
// picked by a salted hash of each record that has nothing to do with the
// shard hash. At the end it cuts the buckets into n sub-batches, n the least
// power of two that makes them MaxBatchBytes/2 on average (at most 64), reads
// them back one at a time, sorts each and emits it as a batch of its own; the
// directory is removed whatever happens. So a worker holds at most
// MaxBatchBytes of records per shard in memory, whatever the shard's size,
// but needs as much scratch disk as the largest shard it gathers (its record
// bytes plus a length prefix per record). Which sub-batch a record falls in
// depends on the record alone, so reruns split alike.
//
// A worker killed while it spills cannot remove its directory; the batching
// DoFn's Setup does, in every worker started later on the machine. Spill
// directories are named s3once-batch-*, and each holds a lock file that its
// worker keeps flock-ed for the spill's life; the kernel drops that lock when
// the worker dies, however it dies. Setup removes a directory only if it can
// take the lock and the directory was last modified at least 10 minutes ago
// (the age floor, which also covers the instant between creating a directory
// and locking it); a directory without a lock file, and every directory on a
// system without flock (Linux, the BSDs and macOS have it), must be a day
// old. Live workers' spills, in other processes or in the same one, are
// never touched; what cannot be removed is logged, never fatal.
//
// A shard whose records
// cannot be split that way, because one sub-batch alone would still pass
// MaxBatchBytes (many identical records, say), fails the pipeline with an
// error that names the destination, window, pane and shard and says to raise
// MaxBatchBytes; so does a shard of more than about 32 x MaxBatchBytes whose
// 64 sub-batches do not all fit (raise Shards there).
//
// A file never spans batches, nor sub-batches: files are at most
// min(MaxFileBytes, MaxBatchBytes) bytes of records; to get larger files,
// raise MaxBatchBytes and MaxFileBytes, or lower Shards. Besides the batch's
// bytes, a worker holds an index of 24 bytes per record, and, while it
// writes, the file's part buffers: PartSize x (Concurrency + 1) bytes; while
// it spills, 64 buffers of 16 KiB. A record larger than MaxFileBytes fails
// the pipeline.
//
// Those bounds hold per bundle. A worker runs as many bundles at once as its
// runner hands it, each with its own batch (and the writer's decoded copy
// of it), so its peak is about that many times MaxBatchBytes. Prism hands a
// worker the bundles of every shard that is ready: with 1e7 records of 100
// bytes (BENCHMARKS.md, scale curve), the sink held 77 MiB with 1 shard,
// and 708 and 515 MiB with 4 and 16. Lower MaxBatchBytes where a worker's
// memory is tight.
//
// Shards defaults to DefaultShards (4) per destination, window and pane: the
// number of files written in parallel for each. A shard split into
// sub-batches is still written by one worker, one sub-batch after another, so
// raise Shards for parallelism and to keep shards off the disk.
//
// # Parquet
//
// Format "parquet" writes Go structs as Apache Parquet files, one column per
// field, with github.com/parquet-go/parquet-go (v0.32.0, pinned). The
// schema comes from the element type and parquet-go's struct tags
// (`parquet:"name,optional,zstd,dict,..."`; "-" leaves a field out);
// xitongsys's dialect (`parquet:"name=..., type=..."`), which Beam's
// parquetio reads, is not the one. Pointers are optional columns, slices
// repeated ones, nested structs groups, time.Time a nanosecond timestamp in
// UTC, []byte and [N]byte byte arrays. While the pipeline is built, Write
// refuses, naming the field, what has no deterministic form: maps (Go's
// iteration order is random), interfaces, channels, functions, complex
// numbers, other arrays, recursive types, and tags parquet-go cannot map;
// Compression other than "none" is refused too, since a Parquet file
// compresses its pages itself (Config.Parquet.Compression: snappy, the
// default, zstd, gzip or none).
//
// The library, of the three weighed (parquet-go, arrow-go's parquet, and
// xitongsys's, which Beam's parquetio uses): parquet-go reflects on plain Go
// structs with no generated code, leaves row groups to the caller (Flush
// ends one; nothing is written between two), writes unbuffered when asked,
// and takes created_by as a setting (its default comes from the build
// information); it is maintained and Apache-2.0. arrow-go goes through
// Arrow records and is the heaviest dependency; xitongsys's is little
// maintained. Through sink.Write, Parquet is written at 1.5 to 1.9 times
// the records per second of Beam's parquetio.Write on the same runner and
// server (BENCHMARKS.md), with every shard a file of its own, exactly once.
// None of them can reopen a file after its row groups were written, so
// s3once does not try (see below). The tests read every file back with
// xitongsys/parquet-go, another implementation.
//
// Through the shuffle a record is its row encoding (see parquet_row.go):
// the fields in order, each in a fixed, ordered, lossless form (integers
// and floats big-endian with their sign bits flipped so that bytes compare
// as numbers do, NaN payloads and -0 kept; strings with their zero bytes
// escaped; nil and empty slices apart; times as UnixNano). The shard hash,
// the sort and MaxFileBytes work on these bytes, as on any format's, so a
// file's rows come out ordered by the type's leading fields, which keeps
// its statistics tight. The writer decodes each record into the element
// type and hands it to parquet-go. The decoder takes canonical encodings
// only, and is fuzzed.
//
// A row group ends once its records reach Parquet.RowGroupBytes of row
// encoding (default 64 MiB) or Parquet.RowGroupRecords, never at a sync
// point or a checkpoint; files roll at MaxFileBytes and MaxFileRecords
// alone. Bytes reach the upload only when a row group ends, and the footer
// at the file's end. A checkpoint therefore persists the row groups ended so
// far, as any file's bytes, and the token is the usual constant-size one
// (invariant I7): what the writer needs to go on, the metadata of those row
// groups and the records of the open one, is rebuilt, not stored. At a
// self-checkpoint the writer keeps the file's encoder in the DoFn instance,
// under its upload (at most two such); a resume in that instance takes it
// back when it stands exactly where the token does (records, bytes and
// CRC64NVME of the bytes). Otherwise (another worker, a crash, an older
// checkpoint restored) the writer encodes the file's records again (the
// element carries them) and drops the bytes, checks their size and
// CRC64NVME against the token's, then goes on. The footer then describes
// every row group, those before the checkpoint included. A mismatch means
// the library or a Parquet setting changed since the checkpoint: the writer
// writes the file again from its first record, as after a lost upload. The
// counters parquet_replays and parquet_records_replayed count these
// re-encodings.
//
// A file's bytes depend on the records, the element type and its tags,
// Shards, MaxFileBytes, MaxFileRecords, Parquet.Compression,
// Parquet.RowGroupBytes, Parquet.RowGroupRecords and the parquet-go
// version; not on CheckpointBytes, CheckpointInterval or where checkpoints
// and crashes fell. The footer's created_by is a fixed string, "s3once
// version 2 (build parquet-go v0.32.0)" (version 1 for output version 1),
// and no key-value metadata or time is written.
//
// Slices (other than []byte) are written, in output version 2, as the
// standard three-level LIST: a group annotated LIST holding a repeated group
// "list" of one field "element", which Iceberg requires and Spark, Trino,
// Athena and DuckDB read as lists. The writer derives, from the element
// type, a type with the same fields and the `list` tag on every slice
// (nested structs alike), decodes each record into it and hands that to
// parquet-go; the row encoding, and so the shard, the sort and the file
// sizes, are those of the element type. Version 1 writes bare repeated
// fields unless the field has the `list` tag. A nil and an empty slice are
// both an empty list in the file.
//
// Statistics of string and []byte columns are bounded in output version 2,
// so that long values do not bloat the file: a chunk's min and max in the
// footer are at most 64 bytes (a min cut to a prefix, a max cut and
// raised by one in its last byte, or its last character for UTF-8, so both
// still bound the values; where no such max exists, as for a prefix of
// 0xff bytes, the chunk has no min and max), pages carry no statistics in
// their headers, and the page index keeps bounds of at most 16 bytes.
// Readers prune row groups by the footer and pages by the page index. With
// one 1 MiB string per row group, version 1's footer held 6 MB of
// statistics, version 2's 4 KB. Version 1 keeps whole values.
//
// Memory: a worker holds, per Parquet file it writes, the open row group's
// pages (compressed) and parquet-go's page buffers (256 KiB per column), on
// top of the batch and the part buffers; plus, per writer instance, the open
// row groups of at most two checkpointed files waiting for their resume.
// With the default RowGroupBytes a file of up to 64 MiB of records is one
// row group.
//
// # Names
//
// Files are named
//
//	<Prefix>/<destination>/<window>-pane-<pane>-shard-<SSSSS>-of-<NNNNN>-file-<FFFFF><suffix>
//
// where <window> is "global" or the window's bounds in UTC
// ("20240601T100000Z-20240601T110000Z"), <pane> the pane's index, SSSSS the
// shard, NNNNN the number of shards, FFFFF the file's index in its shard (all
// zero-padded to five digits), and <suffix> the format's extension followed by
// the codec's (".jsonl.gz"). An empty Prefix or destination leaves out its
// part and slash. The files of a shard that was split into sub-batches carry
// the sub-batch too:
//
//	<Prefix>/<destination>/<window>-pane-<pane>-shard-<SSSSS>-of-<NNNNN>-batch-<BB>-of-<MM>-file-<FFFFF><suffix>
//
// where BB is the sub-batch and MM the number of sub-batches (two digits),
// and FFFFF counts files within the sub-batch. A sub-batch with no records
// writes no file. An input with no records writes no file; no file is ever
// empty.
//
// # Windows, panes and time
//
// Every window and every pane ends its files: a pane's records are written as
// files of their own, named after the pane. To roll files by age in a
// streaming pipeline, fire panes by processing time upstream of Write (for
// example beam.Trigger(trigger.AfterEndOfWindow().EarlyFiring(
// trigger.Repeat(trigger.AfterProcessingTime().PlusDelay(5*time.Minute))))),
// which the runner makes durable, with discarding panes
// (beam.PanesDiscard()): accumulating panes would write earlier records again.
//
// # Configuration and workers
//
// Write checks the Config and the input's type while the pipeline is built,
// and panics with the problem, as Beam's own transforms do; TryWrite returns
// it as an error, and Config.Validate checks a Config alone. The checked
// Config, with its defaults filled in, is the one source of every stage's
// settings, and each stage carries to the workers, inside the pipeline graph
// as JSON, only the settings it reads: Encode its Format, Shards, output
// version and MaxFileBytes; Batch its Shards and MaxBatchBytes; the writer and the commit
// stage, which build S3 clients, the connection (endpoint, region, static
// credentials, request settings) and where the files go, and the writer also
// what decides a file's bytes. Static credentials are therefore visible to
// anyone who can read the job's graph, in those two stages. Workers build
// their S3 client in Setup from them (the AWS SDK's default credential chain
// unless static keys are given). Formats and codecs are chosen by name, so a
// custom one must be registered (RegisterFormat, RegisterCodec) in an init
// function of the program, which runs on every worker; a Destination must be
// a top-level function registered with the register package. A worker finds
// an unregistered function by its name in the symbol table of its own binary,
// so it works on prism (LOOPBACK or PROCESS workers running the program
// itself) and fails only where the worker's binary is stripped (-ldflags=-s):
// the stage then cannot be decoded and the job fails naming the function,
// before any record is written. Registering costs one line and also spares
// the workers reflection.
//
// # The settings marker
//
// Every output folder gets one object, <Prefix>/_s3once_settings
// (ownkeys.SettingsKey), that records the settings its files' bytes and
// names depend on: Format, Compression and its library's module version,
// the spacing of compressed members (min(CheckpointBytes, 1 MiB), only when
// compressed), Shards, MaxBatchBytes, MaxFileBytes, MaxFileRecords, the
// Parquet settings and parquet-go's version, the file-name template with
// its extension, and s3once's output format version. Library versions come
// from the program's build information ("unknown" where it has none, as in
// test binaries). The record, the element type and the Destination function
// are not in it: a changed input is caught by the bytes (the barrier, the
// commit). The name starts with '_', so Spark, Hive, Trino and Athena skip
// it; the sweep never removes it, and s3once never overwrites it.
//
// Its bytes are canonical text: a first line "s3once-settings 1", then one
// "name=value" line per setting, names sorted, values with '%' and bytes
// outside printable ASCII written as %XX. A reader refuses another version
// by its number, and within version 1 ignores names it does not know;
// settings that only one side records are not compared.
//
// The run-wide barrier reads it before it looks at the run's keys, and
// writes it (If-None-Match) once every key is free or holds this run's
// bytes, before any file is committed; without the barrier, each commit
// stage instance reads it before its first commit and writes it after. A
// marker with other settings fails the run with ErrSettingsChanged
// (errcode.SettingsChanged), which names the folder and each setting as
// old -> new and says to write to a fresh Prefix; at the barrier, every
// upload of the run is aborted, as for a taken key. A folder written by a
// release that wrote no marker is accepted and gets one. Preflight reads
// the marker too and reports the same problem before the pipeline starts.
// With FinalizeCommit "always", files committed at bundle finalization do
// not wait for the marker.
//
// # Encodings that outlive a build
//
// Three kinds of bytes written by one build of s3once may be read by a
// later one, and each is checked by golden files under testdata/:
//
//   - The files themselves. For given settings (Format, Compression, Shards,
//     Destination, MaxBatchBytes, MaxFileBytes, MaxFileRecords, CheckpointBytes
//     for compressed files, OutputVersion) and given records, a file's name
//     and bytes never change between versions: a rerun after an upgrade must
//     find its keys holding its own bytes, or it fails with
//     committer.ErrKeyTaken. TestOutputGolden and TestParquetGolden write a
//     grid of those settings for each output version and compare every key
//     and byte with testdata/output/ (version 1) and testdata/output-v2/.
//   - Batches, the writer's elements, which checkpoints carry. Version 3 is
//     a frame of the coder package (coder.Framing, with a bound of 4 GiB
//     instead of the 1 MiB of tokens), written in place, whose decoded records
//     alias the input: a batch is never copied by its codec. Versions 1 and 2,
//     written by earlier builds, had a frame of their own with no length
//     field; they still decode, and their golden files stay as they were. A
//     new build writes version 3 only.
//   - Restrictions, which carry the open file's resume token. Their coder
//     keeps the token as bytes, covered by the frame's checksum, and does not
//     decode it: the writer decodes it once, when it resumes the file, and
//     refuses a token that is not one with recoverable.ErrInvalidToken naming
//     the file, before any S3 call.
//
// # Metrics
//
// Counters in the "s3once" namespace: records_written, bytes_written (object
// bytes), parts_uploaded, files_closed, persists, tails_recovered (resumes
// that restored a non-empty tail), files_committed (files the commit stage
// confirmed), commits_already_done (of those, the ones it found already
// committed), commit_retries (rounds the commit stage repeated after a
// transient failure), files_rewritten and records_rewritten (files written
// again from their first record after a restored token could not be
// recovered, and their records), barrier_files and barrier_kept (files the
// run-wide barrier checked, and of those, the ones already in place from an
// earlier run). Counters of failed bundles are dropped by the runner.
//
// # Left-overs
//
// A crashed or retried attempt can leave a multipart upload that no token
// names any more, and side objects of checkpoints that were never taken. They
// are invisible to readers (uploads are not objects; side objects live under
// StagingPrefix), and committer.Sweep removes them: run it periodically, with
// a cutoff longer than a file may stay open plus the time a checkpoint may be
// restored from, or set an AbortIncompleteMultipartUpload lifecycle rule.
//
// # Production bucket settings
//
// Every S3 call the sink makes, on the workers and in Preflight, goes through
// a client that carries the Config's request settings (internal/s3req, a
// middleware added where the client is built): ExpectedBucketOwner on every
// call; Encryption (SSE-S3, SSE-KMS with KMSKeyID and BucketKey) on every
// object it creates; an SSE-C key on every call that writes or reads data;
// StorageClass, Tags, CacheControl, ContentDisposition and Metadata on the
// output files' uploads. The SSE-C key is never in the Config: it names an
// environment variable or a file that each machine reads
// (SSECustomerKeyEnv, SSECustomerKeyFile), as credentials are found.
//
// A rerun compares a file's content only (size and CRC64NVME): a file
// committed with other object settings or another encryption counts as
// committed and keeps them.
//
// Preflight reads the bucket's own settings too: a write refused with 403
// is tried again with each kind of server-side encryption the Config does
// not ask for, and the one that is taken is named (a bucket policy that
// requires encryption headers); a refusal under ExpectedBucketOwner names
// that setting as a possible cause; a bucket that keeps versions is refused
// unless VersionedBucket is set, because every side object and probe
// deleted there would stay as a billed noncurrent version. With
// VersionedBucket, the clean-up after each commit and the sweep remove the
// old versions and delete markers of s3once's own staging keys, and only
// those (committer.Options.Versioned). Under Object Lock with a default
// retention no version can be removed before the retention ends:
// VersionedBucket is refused there, deletes leave delete markers, and the
// old versions stay until their retention ends (a lifecycle rule expiring
// noncurrent versions under the staging prefix removes them after). Output
// files are written once and never deleted, so retention does not hinder
// commits.
//
// # Completion markers
//
// With Config.CompletionMarker, a last stage groups the committed files'
// FileResults by window; the grouping fires when the watermark passes the
// window, after every file of it went through the commit stage, and writes
// the window's marker (under the run-wide barrier, the results are all in
// the global window, grouped by their Window field: every window's marker is
// written once the whole run is committed, as pane 0, and lists the files of
// all the window's panes): "_SUCCESS" under Prefix for the global window (a
// bounded run), "_SUCCESS-<window>" for others, "-pane-<n>" added for a
// later pane (ownkeys.MarkerKey). MarkerSuccess writes it empty;
// MarkerManifest lists the window's files, each once (a FileResult may
// arrive twice), sorted by key, as JSON lines. Its bytes are a function of
// the files, so it is committed as a file is: PutObject with If-None-Match,
// and an existing marker of the same bytes is a success, of other bytes
// committer.ErrKeyTaken. A window without records has no marker. Neither
// the commit stage nor the sweep touches markers.
package sink
