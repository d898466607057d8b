//go:build race

package main

// defaultReruns is fewer under the race detector, where a run of the
// program takes several times as long.
const defaultReruns = 5
