//go:build !race

package main

// defaultReruns is the reruns of TestRerunsAgreeWithTheFolder, the issue's
// 20 out of 20.
const defaultReruns = 20
