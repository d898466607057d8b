//go:build !iceberg

package main

import (
	"strings"
	"testing"
)

// The default build links no Iceberg: -format iceberg says how to get a
// binary that has the table stage, and writes nothing.
func TestIcebergNeedsItsBuild(t *testing.T) {
	var out, errOut strings.Builder
	code := run(options{data: t.TempDir(), bucket: "demo", format: "iceberg", records: 10, seed: 1}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "make run FORMAT=iceberg") {
		t.Errorf("-format iceberg in the default build: exit %d\n%s", code, errOut.String())
	}
	if strings.Contains(out.String(), "preflight") {
		t.Errorf("the run went on to the pipeline:\n%s", out.String())
	}
}
