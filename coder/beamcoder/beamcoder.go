// Package beamcoder registers package coder's token encodings as Beam coders.
// It is its own package so that coder, and the programs built on it without
// Beam (the s3once operator's command), link no Beam package.
//
// Importing it registers EncodeResume/DecodeResume and
// EncodeCommit/DecodeCommit as the Beam coders of
// recoverable.ResumeRecoverable and recoverable.CommitRecoverable, so that a
// PCollection of tokens, or a restriction holding one, is checkpointed in
// coder's format rather than by Beam's schema coder. Beam fails the bundle
// when an encoder or a decoder returns an error. The sink imports this
// package, so a pipeline that uses sink.Write has the registration.
package beamcoder

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/recoverable"
)

func init() {
	beam.RegisterCoder(reflect.TypeFor[recoverable.ResumeRecoverable](), coder.EncodeResume, coder.DecodeResume)
	beam.RegisterCoder(reflect.TypeFor[recoverable.CommitRecoverable](), coder.EncodeCommit, coder.DecodeCommit)
}
