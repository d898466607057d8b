package mutant_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const pkg = "github.com/s3once/s3once/internal/mutant"

// TestShippedBinariesCarryNoMutant: the shipped programs, built as they
// ship (no tags), do not link internal/mutant, so no switch of a past bug
// can be in them. The same listing with the tag must show the package, or
// the check could not fail.
func TestShippedBinariesCarryNoMutant(t *testing.T) {
	shipped := []string{"./cmd/s3once", "./cmd/s3once-run"}
	if deps := goListDeps(t, "", shipped...); slices.Contains(deps, pkg) {
		t.Errorf("a shipped binary links %s: a package it imports reads a switch without the s3once_mutant build tag", pkg)
	}
	for _, p := range []string{"./committer", "./recoverable", "./sink", "./icebergtable"} {
		if !slices.Contains(goListDeps(t, "s3once_mutant", p), pkg) {
			t.Errorf("%s does not link %s even with -tags s3once_mutant: its mutation points are gone, and the check above proves nothing", p, pkg)
		}
		if slices.Contains(goListDeps(t, "", p), pkg) {
			t.Errorf("%s links %s without the tag", p, pkg)
		}
	}
}

func goListDeps(t *testing.T, tags string, pkgs ...string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goCommand(), append(args, pkgs...)...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, msg)
	}
	return strings.Fields(string(out))
}

// moduleRoot asks the go command where the module's go.mod is.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goCommand(), "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v (%q)", err, out)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func goCommand() string {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		return "go"
	}
	return goBin
}
