// Package scenario is the folder-level property test of the sink.
package scenario
