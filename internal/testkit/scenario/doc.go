// Package scenario is the folder-level property test of the sink
// (TestScenarios, and TestWindowScenarios for windowed unbounded input):
// seeded sequences of 2 to 4 runs of sink.Write against one output folder,
// each state checked by an oracle that shares no code with the sink
// (internal/testkit/folderoracle) and by s3once verify.
//
// # A sequence
//
// Each sequence draws, from its own seed: a first run's settings (Format
// text or jsonl, Compression none, gzip or zstd, Shards, MaxFileRecords,
// MaxFileBytes, TargetFileBytes, OutputVersion 1 or 2, FinalizeCommit
// "auto" or "always") and input (records "<letter><number>-q...", the
// destination their first letter, through a registered top-level
// function), then 1 to 3 more runs, each one of:
//
//   - an input change: identical, a subset, a superset with records sorting
//     before, between or after the others, a record moved to another
//     destination, a destination dropped or added, empty input;
//   - one or two settings changed at once;
//
// each run possibly preceded by damage to the folder (the settings marker
// or a manifest cut at a line boundary, deleted or edited; a file deleted,
// copied to the next file index, or replaced with other bytes of the same
// size; the settings marker of an output-version-1 folder removed, as an
// earlier release left none), or ended between two S3 calls (a loopback
// proxy in front of the server answers every request after the N-th with
// 403 AccessDenied, which nothing retries) and then run again in full.
// Pipelines run on prism, bounded input from beam.CreateList; one sequence
// in five runs on versitygw, the others on the in-memory server
// (internal/testkit/s3mem) served over loopback.
//
// # What is checked
//
// The model knows which run owns each destination's partition. A run whose
// settings differ from the folder's, or whose records for a destination
// differ from its owner's, must be refused and commit nothing (the
// folder's objects, keys, sizes and ETags, unchanged; uploads and staging
// may differ). Any other run must succeed, and after it every partition
// holds exactly its owner's records, in files of one extension, with a
// manifest (output version 2) listing exactly its files, sizes, CRC64NVME
// and record counts; an identical rerun changes no object; no upload of a
// committed key is left open. On a damaged folder a run may be refused (and
// commit nothing) or succeed (and leave the folder right). With
// FinalizeCommit "always" outside the race detector, a refused run may
// have committed files, which then must be named by verify.
//
// After every run and every damage, s3once verify (built once per test
// binary) runs on the folder: exit 0 where the oracle finds the folder
// wrong or unfinished is a failure; where the binary has --read, verify
// --read must exit 0 exactly where the oracle finds the folder right and
// complete. Default verify failing on a folder the oracle finds right is
// logged, not failed (a state it cannot prove without reading).
//
// # Windows
//
// TestWindowScenarios draws unbounded input from a test stream in fixed
// one-hour windows (1 to 3 of them, each expiring before the next begins):
// per window, early batches (each followed by a watermark step), an
// on-time batch, late records added after the window's end and records
// added after its expiry; the trigger fires early panes every 2 to 8
// records per key and late panes every record, or is the default; the
// allowed lateness is 0, 10 or 20 minutes. Format, Compression, Shards
// and the file limits are drawn as for bounded input, with output version
// 2, FinalizeCommit "auto" or "always" (changed by some reruns), and a
// CompletionMarker (none, "success" or "manifest") kept for the sequence.
// A run may end at the PUT of one of its windows' manifests (refusing it,
// or every call after it) or after a random number of calls, and is then
// run again, as it was or with its input changed for a window. Reruns
// change the input for a window: records added, taken, moved to another
// window or destination, sent from late to beyond the lateness or back,
// moved to another pane, records added beyond the lateness only (which
// changes no file), a window added or dropped; or a setting.
//
// The oracle's windowed model (folderoracle.Stream) tells each partition's
// records: every record added before its window expired, none of those
// after. A run is refused where it would change a complete partition (its
// manifest exists): with "auto" that partition stays as it was; with
// "always", files committed at bundle finalization may mix it. A changed
// rerun into a partition whose window has no manifest yet (a run ended
// before it) may commit files beside the ended run's in either mode, but
// must then fail: the manifest stage lists each partition before its
// manifest. A run that would add a partition to a window whose completion
// marker exists must fail, leaving the partition and the marker as they
// were. Partitions and windows a run does not write never change. After a
// run that succeeded, every partition it writes holds exactly its records
// (never two runs' files), with a manifest and the window's completion
// marker where configured. A mixed partition must be named by verify:
// exit 0 where the oracle finds the folder wrong or unfinished fails the
// sequence, as for bounded input.
//
// # Budget and reproduction
//
// Each run samples the pinned seeds and S3ONCE_SCENARIOS random sequences
// (default 30), their seeds drawn from a seed printed at the start
// (S3ONCE_SCENARIO_SEED fixes it). Every failing sequence is reported with
// its steps and a one-line reproduction: S3ONCE_SCENARIO_SEEDS=<seed>
// (comma-separated seeds run only those sequences). The last line gives
// the sequences, pipeline runs, verify runs and the time.
// TestWindowScenarios runs its pinned seeds and S3ONCE_WINDOW_SCENARIOS
// random sequences (default 2), with the same seed variables, and skips
// itself under the race detector (jobs failing with bundles in flight
// make Beam Go's harness report a data race); its last line also counts
// the window states the sequences reached.
package scenario
