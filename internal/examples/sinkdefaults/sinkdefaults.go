// Package sinkdefaults holds what the example pipelines (pipelines/corpus and
// pipelines/events) set on the sink alike: their default format and one
// destination per record.
package sinkdefaults

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/sink"
)

// Configure sets the example's default format ("jsonl") when cfg names none,
// and destination as cfg's Destination.
func Configure(cfg *sink.Config, destination any) {
	if cfg.Format == "" {
		cfg.Format = "jsonl"
	}
	cfg.Destination = destination
}

// Write writes col through sink.TryWrite with cfg as Configure sets it.
func Write(s beam.Scope, col beam.PCollection, cfg sink.Config, destination any) (beam.PCollection, error) {
	Configure(&cfg, destination)
	return sink.TryWrite(s, col, cfg)
}
