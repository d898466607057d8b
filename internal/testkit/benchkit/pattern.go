// Package benchkit is what the benchmarks of package bench share: Pattern,
// a source of any number of pseudo-random bytes that holds one block in
// memory, and HeapSampler and PeakRSS, which measure a run's memory. It is
// for benchmarks and tests only.
package benchkit

import (
	"io"
	"math/rand/v2"
	"sync"
)

// BlockSize is the length of the block a Pattern repeats.
const BlockSize = 1 << 20

// block is BlockSize pseudo-random bytes, the same in every process.
var block = sync.OnceValue(func() []byte {
	r := rand.New(rand.NewPCG(0x53334f4e, 0x43452121))
	b := make([]byte, BlockSize)
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
})

// Pattern is a source of a fixed number of bytes made of one pseudo-random
// block repeated: any amount of data without holding it in memory. It is an
// io.Reader and nothing more (no Seek, no ReadAt), so a reader of it must copy
// the bytes into its own buffers, the way it would from a network or a file.
type Pattern struct {
	left int64
	off  int // offset in the block
}

// NewPattern returns a Pattern of size bytes.
func NewPattern(size int64) *Pattern { return &Pattern{left: size} }

// Next returns the next bytes, at most max of them, without copying: the
// slice aliases the shared block and must not be written to. It returns an
// empty slice at the end.
func (p *Pattern) Next(max int) []byte {
	b := block()
	n := min(int64(max), p.left, int64(len(b)-p.off))
	s := b[p.off : p.off+int(n)]
	p.left -= n
	p.off = (p.off + int(n)) % len(b)
	return s
}

// Read copies the next bytes into b.
func (p *Pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(b) {
		s := p.Next(len(b) - n)
		if len(s) == 0 {
			break
		}
		n += copy(b[n:], s)
	}
	return n, nil
}

// Fill fills b from the start of the pattern, the bytes a Pattern yields
// first, and returns b.
func Fill(b []byte) []byte {
	p := NewPattern(int64(len(b)))
	_, _ = io.ReadFull(p, b)
	return b
}
