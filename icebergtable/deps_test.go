package icebergtable

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are the module paths that programs not using the table stage must
// not link.
var heavy = []string{"github.com/apache/iceberg-go", "github.com/apache/arrow-go", "modernc.org/sqlite"}

// TestOthersDoNotLinkIceberg: the batch example and the s3once command do
// not link iceberg-go, Arrow or SQLite; this package does (so the check
// sees them where they are).
func TestOthersDoNotLinkIceberg(t *testing.T) {
	deps := func(pkgs ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		return strings.Fields(string(out))
	}
	linked := func(list []string, module string) bool {
		for _, p := range list {
			if p == module || strings.HasPrefix(p, module+"/") {
				return true
			}
		}
		return false
	}
	others := deps("github.com/s3once/s3once/pipelines/batch", "github.com/s3once/s3once/cmd/s3once", "github.com/s3once/s3once/cmd/s3once-run")
	own := deps("github.com/s3once/s3once/icebergtable")
	for _, m := range heavy {
		if linked(others, m) {
			t.Errorf("pipelines/batch, cmd/s3once or cmd/s3once-run links %s", m)
		}
		if !linked(own, m) {
			t.Errorf("icebergtable does not link %s: the check looks for the wrong path", m)
		}
	}
}
