package sink

// A pipeline that uses the sink checkpoints recoverable's tokens in package
// coder's format wherever Beam itself encodes one: beamcoder registers those
// coders when imported. Package coder links no Beam so that programs without
// a pipeline (cmd/s3once) stay free of it.
import _ "github.com/s3once/s3once/coder/beamcoder"
