package runnererr

import (
	"errors"
	"strings"
	"testing"
)

// Cause picks the sink's message out of a runner's chain, else the last
// cause, else the first line; Report leaves it out, saying it comes last.
func TestCausePicksTheSinksMessage(t *testing.T) {
	runner := errors.New("job job-001 failed:\nbundle inst032 stage-005 failed: while executing Process for Plan[stage-005]:\n" +
		"1: DataSource[...]\n\tcaused by:\nsource failed processing data\n\tcaused by:\nDoFn[UID:4] failed:\n" +
		"s3once sink: commit s3://b/k: another object is at the key\n")
	if got, want := Cause(runner), "s3once sink: commit s3://b/k: another object is at the key"; got != want {
		t.Errorf("Cause = %q, want %q", got, want)
	}
	if r := Report(runner); strings.Contains(r, "another object") || !strings.HasSuffix(r, "(the failure, given last)") {
		t.Errorf("Report = %q, want the chain with the failure taken out", r)
	}
	other := errors.New("job failed:\nstage 3\n\tcaused by:\nrpc error: unavailable\nmore")
	if got := Cause(other); got != "rpc error: unavailable" {
		t.Errorf("Cause = %q", got)
	}
	if got := Cause(errors.New("plain")); got != "plain" {
		t.Errorf("Cause = %q", got)
	}
}
