//go:build iceberg

package main

import (
	"strings"
	"testing"
)

// The build with the table stage (make run FORMAT=iceberg) appends the
// corpus to its table once, partitioned by topic (the corpus's 4 topics):
// a rerun of the same run finds its snapshot and adds nothing.
func TestRunIceberg(t *testing.T) {
	data := t.TempDir()
	for i, want := range []string{"appended as snapshot", "already in snapshot"} {
		var out, errOut strings.Builder
		code := run(options{data: data, bucket: "demo", format: "iceberg", records: 500, seed: 1}, &out, &errOut)
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, code, out.String(), errOut.String())
		}
		text := out.String()
		for _, w := range []string{"table lake.corpus_by_topic", want, "the table has 1 snapshots and 500 rows in 4 partitions by identity(Topic) as topic"} {
			if !strings.Contains(text, w) {
				t.Errorf("run %d: output lacks %q:\n%s", i+1, w, text)
			}
		}
	}
}
