// Package runnererr splits a runner's error into the report and the line
// to act on. program.Format, the one way s3once prints a pipeline's
// error, lays them out; the example harness and s3once-run, which put the
// line to act on into their own closing line, take the two parts from
// here.
package runnererr

import "strings"

// The prefix of the sink's errors, as they reach the driver inside a
// runner's report.
const sinkPrefix = "s3once sink: "

// Report is a runner's error without the line to act on (Cause): where it
// stood, the report says that it follows.
func Report(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), Cause(err), "(the failure, given last)")
}

// Cause picks the line to act on out of a runner's error: the sink's own
// message when it holds one, else the last cause of the chain, else the
// first line.
func Cause(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, sinkPrefix); i >= 0 {
		return FirstLine(msg[i:])
	}
	if i := strings.LastIndex(msg, "caused by:\n"); i >= 0 {
		return FirstLine(msg[i+len("caused by:\n"):])
	}
	return FirstLine(msg)
}

// FirstLine is s's first line, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
