// Package format holds the record formats and the compression codecs that
// the sink writes files with, by name: a sink.Config names its format in
// Format and its codec in Compression, and every worker looks the names up
// here.
//
// # Built-in names
//
// Formats: "text" (strings or []byte, one per line; a record holding a
// newline is refused), "jsonl" (any type encoding/json encodes, one JSON
// value per line) and "csv" ([]string, a CSVRecorder, or a struct of plain
// fields; see CSV). The sink registers "parquet" too, for Go structs.
// Codecs: "none", "gzip" (Gzip) and "zstd" (Zstd).
//
// # What an implementation guarantees
//
// A Format turns one element into one record, its terminator included; a
// file is its records, sorted bytewise, after an optional FileHeader. A
// Codec compresses a file as several independent streams, one per stretch
// of records between two checkpoints, so that a writer can stop at a
// checkpoint and carry on in another process. Both must be deterministic
// (equal input gives equal bytes: a rerun rewrites a file byte for byte,
// and the output stays exactly once), safe for concurrent use, and a Codec's
// streams must concatenate into one valid stream (gzip members and zstd
// frames do). The sink records what a codec writes for a fixed input in the
// folder's settings marker, so a codec whose bytes change refuses reruns
// into folders written before.
//
// # Registering one
//
// Register a format with Register and a codec with RegisterCodec, under a
// name of its own, in an init function, so that every worker process knows
// it before a stage looks it up:
//
//	func init() {
//		format.Register("orders-csv", format.CSV{Header: []string{"id", "total"}})
//		format.RegisterCodec("gzip-fast", format.Gzip{Level: 1})
//	}
//
// A name registered twice, an empty name or a nil implementation panics;
// a name nobody registered fails the Config's validation, listing the
// registered names.
package format
