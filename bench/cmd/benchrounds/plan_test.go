package main

import (
	"strconv"
	"strings"
	"testing"
)

// TestTurnsRotateEvenly: in every plan, each run in turns is a whole number
// of rotations, so that every side takes each place in the order equally
// often and none gains from going first or last.
func TestTurnsRotateEvenly(t *testing.T) {
	found := 0
	for name, p := range plans {
		for _, g := range p.groups {
			if g.bench != "BenchmarkUploadInTurns" {
				continue
			}
			for _, path := range g.runs() {
				found++
				bt := g.benchtime(path)
				n, err := strconv.Atoi(strings.TrimSuffix(bt, "x"))
				if err != nil || !strings.HasSuffix(bt, "x") {
					t.Errorf("plan %s, %v: benchtime %q is not a count of operations", name, path, bt)
					continue
				}
				if n%turnSides != 0 {
					t.Errorf("plan %s, %v: %d operations, not a multiple of the %d sides", name, path, n, turnSides)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no plan runs BenchmarkUploadInTurns")
	}
}
