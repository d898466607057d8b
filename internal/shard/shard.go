// Package shard is the shard hash: which of a destination's shards a
// record goes to, a function of the record's bytes alone, so that equal
// records shard equally on every worker and every rerun. It is part of the
// output format: each output version keeps its hash byte for byte.
//
//   - Version 1: FNV-1a 64 of the record's bytes modulo the shard count.
//     Its low bits depend only on the low bits of each byte, so records
//     that repeat a field, or a power-of-two shard count, leave shards
//     empty; it is kept so that a folder written by version 1 is rerun
//     byte for byte.
//   - Version 2: XXH64 of the record's bytes with the seed seed, whose
//     every output bit depends on every input bit, mapped to [0, shards) by
//     multiply-shift (the high word of hash times shards), which has a bias
//     of at most shards/2^64. XXH64 is specified byte for byte, so a record
//     lands in the same shard in every process, build and machine. It
//     shares nothing with the sub-batch hash (spill.Hash: a salted FNV-1a
//     through the MurmurHash3 finaliser), so a shard's records still spread
//     over every sub-batch.
package shard

import (
	"fmt"
	"hash/fnv"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// seed is the seed of output version 2's shard hash. It is part of the
// output format: changing it moves records to other shards, and so other
// files.
const seed uint64 = 0x73336f6e63652d32 // "s3once-2"

// Sharder picks a record's shard among a shard count, as its output
// version says. It is not safe for concurrent use; a DoFn instance holds
// one.
type Sharder struct {
	version int
	shards  uint64
	xx      *xxhash.Digest
}

// New returns the Sharder of an output version (1 or 2) for shards shards
// (at least 1).
func New(version, shards int) (*Sharder, error) {
	if shards < 1 {
		return nil, fmt.Errorf("shard count %d is below 1", shards)
	}
	switch version {
	case 1:
		return &Sharder{version: 1, shards: uint64(shards)}, nil
	case 2:
		return &Sharder{version: 2, shards: uint64(shards), xx: xxhash.NewWithSeed(seed)}, nil
	}
	return nil, fmt.Errorf("output version %d is not 1 or 2", version)
}

// Of returns rec's shard, in [0, shards).
func (s *Sharder) Of(rec []byte) int {
	if s.version == 1 {
		h := fnv.New64a()
		h.Write(rec)
		return int(h.Sum64() % s.shards)
	}
	s.xx.ResetWithSeed(seed)
	s.xx.Write(rec)
	hi, _ := bits.Mul64(s.xx.Sum64(), s.shards)
	return int(hi)
}
