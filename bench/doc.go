// Package bench measures s3once against the tools a user would pick instead,
// on the same machine, the same local S3 server (versitygw) and the same
// bytes: recoverable.Stream against the AWS SDK's manager.Uploader, against
// a bare loop of UploadPart calls over buffers filled in advance (the
// ceiling) and against that loop plus the copying, checksumming and listing
// that no writer fed by Write calls can skip (the copy ceiling), the cost of
// checkpoints, a
// stream's peak memory, token sizes, persist and recover latency, the
// sink.Write pipeline against Beam's textio.Write on prism, and Parquet
// through sink.Write against Beam's parquetio.Write (the same records, one
// struct type per tag dialect). The memory of an open Parquet file is
// measured in package sink (BenchmarkParquetOpenFileMemory), which alone
// reaches the encoder.
//
// The benchmarks are ordinary `go test -bench` functions. Each side of a
// comparison is a sub-benchmark named side=<name>, so one run can interleave
// the sides; `make bench` does that with the benchrounds program (see
// cmd/benchrounds), which runs every side once per round, for several rounds,
// and compares the sides with benchstat. The stream, the two ceilings and
// manager.Uploader are also compared in turns within one process
// (BenchmarkUploadInTurns), file by file, so that their ratios do not carry
// what the machine did between two processes. The benchmark server keeps its data in RAM where the
// machine has /dev/shm. BENCHMARKS.md at the repository root holds the
// results.
//
// The package is its tests alone: the data source and the memory sampler
// they share are internal/testkit/benchkit, which no library code imports.
package bench
