package recoverable

import (
	"crypto/rand"
	"encoding/hex"
)

// newNonce names one incarnation of a stream: eight hex digits, random, so
// that two attempts persisting the same sequence number write side objects
// under different keys.
func newNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
