// Package pattern makes the deterministic content the integration tests
// write and check: the bytes of a file are a function of its seed alone.
package pattern

import (
	"encoding/binary"
	"math/rand/v2"
)

// Bytes returns n bytes derived from seed. Equal seeds give equal bytes; the
// content is text-like (printable, with newlines) so that a diff of two
// versions can be read.
func Bytes(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	r := rand.New(rand.NewChaCha8(key))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
	b := make([]byte, n)
	for i := range b {
		if i%80 == 79 {
			b[i] = '\n'
			continue
		}
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}
