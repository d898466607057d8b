package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A run with -format parquet writes Parquet files under corpus-parquet/ and
// reads them back: the summary says every file's footer holds what was
// committed, and all the documents.
func TestRunParquet(t *testing.T) {
	data := t.TempDir()
	var out, errOut strings.Builder
	code := run(options{data: data, bucket: "demo", format: "parquet", records: 3000, seed: 1}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	text := out.String()
	for _, want := range []string{"preflight of s3://demo/corpus-parquet/ ... ok", "as Parquet with sink.Write",
		"files committed to s3://demo/corpus-parquet/", "read back with parquet-go: ", "3,000 rows in their footers",
		"all 3,000 documents", "-name '*.parquet'", "the first record of corpus-parquet/topic="} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	files, err := filepath.Glob(filepath.Join(data, "demo", "corpus-parquet", "topic=*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Parquet files under the data folder (%v)", err)
	}
	if code := run(options{data: data, bucket: "demo", format: "csv", records: 10}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), `-format "csv"`) {
		t.Errorf("-format csv: exit %d\n%s", code, errOut.String())
	}
}
