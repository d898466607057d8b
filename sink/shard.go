package sink

import (
	"fmt"
	"hash/fnv"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// shardSeed is the seed of output version 2's shard hash. It is part of the
// output format: changing it moves records to other shards, and so other
// files.
const shardSeed uint64 = 0x73336f6e63652d32 // "s3once-2"

// sharder picks a record's shard among Shards, as the output version says.
//
//   - Version 1: FNV-1a 64 of the record's bytes modulo Shards. Its low bits
//     depend only on the low bits of each byte, so records that repeat a
//     field, or a power-of-two shard count, leave shards empty; it is kept
//     so that a folder written by version 1 is rerun byte for byte.
//   - Version 2: XXH64 of the record's bytes with the seed shardSeed, whose
//     every output bit depends on every input bit, mapped to [0, Shards) by
//     multiply-shift (the high word of hash times Shards), which has a bias
//     of at most Shards/2^64. XXH64 is specified byte for byte, so a record
//     lands in the same shard in every process, build and machine. It
//     shares nothing with the sub-batch hash (spill.Hash: a salted FNV-1a
//     through the MurmurHash3 finaliser), so a shard's records still spread
//     over every sub-batch.
//
// A sharder is not safe for concurrent use; a DoFn instance holds one.
type sharder struct {
	version int
	shards  uint64
	xx      *xxhash.Digest
}

// newSharder returns the sharder of an output version (1 or 2) for shards
// shards (1 to MaxShards).
func newSharder(version, shards int) (*sharder, error) {
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("shard count %d is not in [1, %d]", shards, MaxShards)
	}
	switch version {
	case 1:
		return &sharder{version: 1, shards: uint64(shards)}, nil
	case 2:
		return &sharder{version: 2, shards: uint64(shards), xx: xxhash.NewWithSeed(shardSeed)}, nil
	}
	return nil, fmt.Errorf("output version %d is not 1 or %d", version, LatestOutputVersion)
}

// shard returns rec's shard, in [0, Shards).
func (s *sharder) shard(rec []byte) int {
	if s.version == 1 {
		h := fnv.New64a()
		h.Write(rec)
		return int(h.Sum64() % s.shards)
	}
	s.xx.ResetWithSeed(shardSeed)
	s.xx.Write(rec)
	hi, _ := bits.Mul64(s.xx.Sum64(), s.shards)
	return int(hi)
}
