// Package s3once is the entry point to s3once's documentation: an
// exactly-once S3 file sink for Apache Beam Go pipelines. It holds no code;
// start with the package that fits what you do.
//
//   - Writing files from a pipeline: package sink (sink.Write, sink.Config,
//     sink.Preflight). `go doc github.com/s3once/s3once/sink`. Package
//     format holds the record formats and compression codecs a Config
//     names, and registers a program's own.
//   - Running a complete example program: pipelines/minimal (about 40 lines:
//     beam.Init, Preflight, Write, beamx.Run), pipelines/batch and
//     pipelines/streaming.
//   - Operating a bucket: the s3once command (cmd/s3once) sweeps left-overs
//     of crashed writers and inspects tokens.
//   - Building on the protocol without Beam: package recoverable (streams
//     over multipart uploads that survive crashes), package committer
//     (verified, idempotent commits, clean-up, sweep) and package coder (the
//     tokens' binary encoding).
//   - Telling failures apart after a runner turned them into text: package
//     errcode (stable codes in the messages, one parser).
//
// The README is the first hour; docs/guarantees.md gives the guarantees and
// their limits, and docs/testing.md the test that proves each.
package s3once
