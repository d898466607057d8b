package coder

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/s3once/s3once/recoverable"
)

// Importing this package registers EncodeResume/DecodeResume and
// EncodeCommit/DecodeCommit as the Beam coders of recoverable.ResumeRecoverable
// and recoverable.CommitRecoverable, so that a PCollection of tokens, or a
// restriction holding one, is checkpointed in this package's format rather
// than by Beam's schema coder. Beam fails the bundle when an encoder or a
// decoder returns an error.
func init() {
	beam.RegisterCoder(reflect.TypeFor[recoverable.ResumeRecoverable](), EncodeResume, DecodeResume)
	beam.RegisterCoder(reflect.TypeFor[recoverable.CommitRecoverable](), EncodeCommit, DecodeCommit)
}
