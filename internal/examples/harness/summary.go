package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/s3once/s3once/sink"
)

// MaxRows is how many files the summary's table lists before it shortens.
const MaxRows = 40

// Summary prints what a run committed: a table of the files (key, size,
// records), the totals, the elapsed time and the throughput, and what the
// sink's counters say about checkpoints and commits.
type Summary struct {
	// Name of the example ("batch", "streaming").
	Name   string
	Bucket string
	Prefix string
	Outcome
}

// Write prints the summary.
func (s Summary) Write(w io.Writer) error {
	var files, bytes, records int64
	for _, r := range s.Results {
		files++
		bytes += r.Bytes
		records += r.Records
	}
	remote := len(s.Results) == 0 && s.Counters["example/files"] > 0
	if remote {
		files, bytes, records = s.Counters["example/files"], s.Counters["example/bytes"], s.Counters["example/records"]
	}
	where := "s3://" + s.Bucket + "/"
	if s.Prefix != "" {
		where += strings.TrimSuffix(s.Prefix, "/") + "/"
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "s3once %s: %d files committed to %s in %v\n\n", s.Name, files, where, s.Elapsed.Round(time.Millisecond))
	if len(s.Results) > 0 {
		writeTable(b, s.Results, files, bytes, records)
	} else if remote {
		fmt.Fprintf(b, "  (the files were committed on remote workers: their keys are in the worker logs and under %s)\n", where)
		fmt.Fprintf(b, "  TOTAL %d files, %s, %s records\n", files, HumanBytes(bytes), Thousands(records))
	}
	secs := s.Elapsed.Seconds()
	if secs > 0 {
		fmt.Fprintf(b, "\nelapsed %v · %s/s · %s records/s\n", s.Elapsed.Round(time.Millisecond), HumanBytes(int64(float64(bytes)/secs)), Thousands(int64(float64(records)/secs)))
	}
	c := s.Counters
	fmt.Fprintf(b, "checkpoints %d · resumed after a self-checkpoint %d · recovered after a failure %d · parts uploaded %d\n",
		c["s3once/persists"], c["s3once/self_checkpoint_resumes"], c["s3once/recoveries"], c["s3once/parts_uploaded"])
	// The run-wide barrier's counters come from the one element that
	// checks every file of the run, so no runner thins them; the commit
	// stage's come from every bundle that commits, and prism may lose some
	// (docs/operating.md#metrics).
	if files, ok := c["s3once/barrier_files"]; ok {
		fmt.Fprintf(b, "files of this run, checked by the run-wide barrier %d", files)
		if kept := c["s3once/barrier_kept"]; kept > 0 {
			fmt.Fprintf(b, " · %d kept from an earlier run", kept)
		}
	} else {
		fmt.Fprintf(b, "files verified by the commit stage at least %d", c["s3once/files_committed"])
	}
	b.WriteString("\n")
	if n := c["s3once/throttled_calls"]; n > 0 {
		fmt.Fprintf(b, "throttled (SlowDown) calls %d · answers %d · waited %v on the backoff\n",
			n, c["s3once/slowdown_answers"], (time.Duration(c["s3once/throttle_wait_ms"]) * time.Millisecond).Round(time.Millisecond))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable prints the files as a table: key (left-aligned), size and
// records (right-aligned), then the totals.
func writeTable(b *strings.Builder, rs []sink.FileResult, files, bytes, records int64) {
	type row struct{ key, size, records string }
	rows := []row{{"KEY", "SIZE", "RECORDS"}}
	for i, r := range rs {
		if i == MaxRows && len(rs) > MaxRows+1 {
			rows = append(rows, row{fmt.Sprintf("... and %d more", len(rs)-MaxRows), "", ""})
			break
		}
		rows = append(rows, row{r.Key, HumanBytes(r.Bytes), Thousands(r.Records)})
	}
	rows = append(rows, row{fmt.Sprintf("TOTAL (%d files)", files), HumanBytes(bytes), Thousands(records)})
	wk, ws, wr := 0, 0, 0
	for _, r := range rows {
		wk, ws, wr = max(wk, len(r.key)), max(ws, len(r.size)), max(wr, len(r.records))
	}
	for i, r := range rows {
		if i == len(rows)-1 {
			fmt.Fprintf(b, "  %s\n", strings.Repeat("-", wk+ws+wr+4))
		}
		fmt.Fprintf(b, "  %-*s  %*s  %*s\n", wk, r.key, ws, r.size, wr, r.records)
	}
}

// HumanBytes renders n bytes in binary units.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Thousands renders n with thousands separators.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// WriteResultsJSON writes the results to path as a JSON array, for programs
// that read a run's output (the integration tests).
func WriteResultsJSON(path string, rs []sink.FileResult) error {
	if rs == nil {
		rs = []sink.FileResult{}
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
