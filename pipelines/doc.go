// Package pipelines holds the runnable examples of s3once: Beam pipelines
// that write through sink.Write.
//
//   - pipelines/batch: a generated, seeded text corpus written as JSON Lines
//     (gzip), one folder per topic.
//   - pipelines/streaming: timestamped events in fixed windows, files per
//     window.
//
// Both are main packages with flags for the bucket and prefix, the S3
// endpoint (--s3-endpoint, unset for AWS), the size of the input, and Beam's
// runner flags (--runner, --endpoint for a job service). They share the
// flag handling, the preflight and the summary of the harness in
// internal/examples/harness (not importable from outside this module); the generators
// live in packages corpus and events, so that other programs
// (cmd/s3once-run, the integration tests) build the same pipelines.
package pipelines
