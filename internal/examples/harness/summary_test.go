package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3once/s3once/sink"
)

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB",
	} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234",
	} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSummaryTable(t *testing.T) {
	var rs []sink.FileResult
	for i := range MaxRows + 5 {
		rs = append(rs, sink.FileResult{Bucket: "b", Key: fmt.Sprintf("out/f-%03d.jsonl.gz", i), Bytes: 2048, Records: 1000})
	}
	s := Summary{Name: "batch", Bucket: "b", Prefix: "out", Outcome: Outcome{
		Results: rs, Elapsed: 2 * time.Second,
		Counters: map[string]int64{"s3once/persists": 7, "s3once/files_committed": int64(len(rs))},
	}}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		fmt.Sprintf("s3once batch: %d files committed to s3://b/out/ in 2s", len(rs)),
		"out/f-000.jsonl.gz", "... and 5 more",
		fmt.Sprintf("TOTAL (%d files)", len(rs)), "90.0 KiB", "45,000",
		"elapsed 2s", "22,500 records/s", "checkpoints 7",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, fmt.Sprintf("f-%03d", MaxRows)) {
		t.Errorf("summary lists more than %d rows:\n%s", MaxRows, out)
	}
}

func TestSummaryOfARemoteRun(t *testing.T) {
	s := Summary{Name: "batch", Bucket: "b", Outcome: Outcome{Elapsed: time.Second,
		Counters: map[string]int64{"example/files": 3, "example/bytes": 3 << 20, "example/records": 300}}}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 files committed to s3://b/", "remote workers", "TOTAL 3 files, 3.0 MiB, 300 records"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestResultsDeduplicates(t *testing.T) {
	collectedMu.Lock()
	collected["run-x"] = []sink.FileResult{{Bucket: "b", Key: "k2"}, {Bucket: "b", Key: "k1"}, {Bucket: "b", Key: "k2"}}
	collectedMu.Unlock()
	rs := Results("run-x")
	if len(rs) != 2 || rs[0].Key != "k1" || rs[1].Key != "k2" {
		t.Errorf("Results = %+v, want k1, k2 once each", rs)
	}
	if len(Results("run-x")) != 0 {
		t.Error("Results did not forget the run")
	}
}

func TestWithFlagNames(t *testing.T) {
	got := withFlagNames("check Config.Endpoint, that the server runs; set Config.DisableChecksums; region (Config.Region or AWS_REGION)")
	want := "check --s3-endpoint, that the server runs; set --s3-disable-checksums; region (--s3-region or AWS_REGION)"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// TestSummarySaysKeptAndResumed: a rerun that keeps the earlier run's files
// says so, and self-checkpoint resumes do not read like recoveries.
func TestSummarySaysKeptAndResumed(t *testing.T) {
	s := Summary{Name: "batch", Bucket: "b", Prefix: "out", Outcome: Outcome{
		Results: []sink.FileResult{{Bucket: "b", Key: "out/f", Bytes: 1, Records: 1}}, Elapsed: time.Second,
		Counters: map[string]int64{
			"s3once/persists": 24, "s3once/self_checkpoint_resumes": 24, "s3once/files_committed": 12,
			"s3once/barrier_files": 12, "s3once/barrier_kept": 12, "s3once/commits_already_done": 12,
		},
	}}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"12 kept from an earlier run", "resumed after a self-checkpoint 24", "recovered after a failure 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, banned := range []string{"tails recovered", "found already committed"} {
		if strings.Contains(out, banned) {
			t.Errorf("summary says %q:\n%s", banned, out)
		}
	}
}

// The summary counts the run's files from the run-wide barrier's counters,
// which one element reports, not from the commit stage's, which prism may
// thin: a rerun of 12 files whose commit stage reported 5 says 12.
func TestSummaryCountsFromTheBarrier(t *testing.T) {
	s := Summary{Name: "batch", Bucket: "b", Prefix: "out", Outcome: Outcome{Elapsed: time.Second,
		Counters: map[string]int64{"s3once/files_committed": 5, "s3once/commits_already_done": 5,
			"s3once/barrier_files": 12, "s3once/barrier_kept": 12}}}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	if want := "files of this run, checked by the run-wide barrier 12 · 12 kept from an earlier run\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), " 5") {
		t.Errorf("summary shows the commit stage's thinned count:\n%s", b.String())
	}
	s.Counters = map[string]int64{"s3once/files_committed": 29}
	b.Reset()
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	if want := "files verified by the commit stage at least 29\n"; !strings.Contains(b.String(), want) {
		t.Errorf("without the barrier, summary lacks %q:\n%s", want, b.String())
	}
}
