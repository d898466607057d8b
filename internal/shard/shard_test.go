package shard

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
)

// TestShardVersion1IsFNV pins version 1's shard to FNV-1a 64 modulo Shards,
// which folders written by version 1 depend on.
func TestShardVersion1IsFNV(t *testing.T) {
	for _, shards := range []int{1, 3, 4, 16, 10000} {
		s, err := New(1, shards)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			rec := fmt.Appendf(nil, "record %d\n", i)
			h := fnv.New64a()
			h.Write(rec)
			if got, want := s.Of(rec), int(h.Sum64()%uint64(shards)); got != want {
				t.Fatalf("version 1, %d shards, %q: shard %d, want %d", shards, rec, got, want)
			}
		}
	}
}

// TestShardVersion2Golden pins version 2's shards: a change of the hash,
// the seed or the mapping moves records to other files, which breaks reruns
// of version 2 folders. The values were checked against an XXH64 written
// apart from the library, from the algorithm's specification.
func TestShardVersion2Golden(t *testing.T) {
	for _, tc := range []struct {
		rec    string
		shards int
		want   int
	}{
		{"", 4, 2},    // XXH64 0xab90d3035e17c590
		{"a\n", 4, 3}, // 0xf13aa331643a1c86
		{`{"user":"u123","email":"u123@example.com"}` + "\n", 4, 2}, // 0x872ca6a7e1aea61a
		{"00000123,00000123,ok\n", 16, 14},                          // 0xe089399de0764377
		{"record 7\n", 10000, 9398},                                 // 0xf09855f817e2f931
		{strings.Repeat("x", 100) + "\n", 16, 14},                   // 0xe4adedee3ad678f9: the 32-byte stripes
	} {
		s, err := New(2, tc.shards)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Of([]byte(tc.rec)); got != tc.want {
			t.Errorf("version 2, %d shards, %q: shard %d, want %d", tc.shards, tc.rec, got, tc.want)
		}
	}
}

// TestNewRefuses: an unknown output version, or no shard, is an error.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct{ version, shards int }{{0, 4}, {3, 4}, {-1, 4}, {2, 0}, {1, -1}} {
		if _, err := New(tc.version, tc.shards); err == nil {
			t.Errorf("New(%d, %d) accepted", tc.version, tc.shards)
		}
	}
}
