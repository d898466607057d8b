// Package golden compares what a test encodes with a golden file under the
// package's testdata/, and rewrites the file only when the test binary runs
// with -update. A golden file changes only on purpose: a change of an
// encoding that outlives a build needs a new version, not new golden bytes.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of the test binary: rewrite the golden files
// from the code.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// File compares got with testdata/name, or first writes it there under
// -update, and returns the file's bytes.
func File(t testing.TB, name string, got []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from %s: a change of the format needs a new version", path)
	}
	return want
}

// Read returns testdata/name, failing t if it cannot.
func Read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
