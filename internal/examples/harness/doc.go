// Package harness is the harness the example pipelines (pipelines/batch,
// pipelines/streaming) and cmd/s3once-run share: the flags that become a
// sink.Config, running a pipeline on the runner the flags choose (the
// embedded prism runner by default), collecting the FileResults, the summary
// printed at the end, and the log filter. It lives under internal/ because
// it is the examples' plumbing, not part of s3once's interface: a program of
// its own needs none of it (pipelines/minimal shows one).
//
// The sink's flags come from one table (sinkFlagTable), each entry naming a
// flag and the sink.Config field it sets; the flag takes the field's type,
// and nothing copies the fields by hand. The library's messages name Config
// fields ("set Config.Endpoint"), since a user's program has no such flags;
// the examples print them with the table's flag names instead.
//
// A failed run's error comes back from the runner as text. A program that
// branches on what failed (cmd/s3once-run, on a taken key) asks package
// errcode for the code in that text; it never matches the message's words.
// Cause only picks the line to show.
package harness
