package filebody

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
)

// canaryLines is the size of the canary corpus, in lines (about 70 KiB).
const canaryLines = 1000

// canaryCorpus is text-like lines with repeats and noise, so that a
// compressor's matching and entropy coding both show in its output.
var canaryCorpus = sync.OnceValue(func() []byte {
	var b []byte
	x := uint64(0x9e3779b97f4a7c15)
	for i := range canaryLines {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"user":"u`...)
		b = strconv.AppendUint(b, x%5000, 10)
		b = append(b, `","value":`...)
		b = strconv.AppendUint(b, x>>20, 16)
		b = append(b, `,"text":"the quick brown fox jumps over the lazy dog"}`...)
		b = append(b, '\n')
	}
	return b
})

// Canary is the canary digest of c: the SHA-256 (its first 16 bytes, as
// "sha256:" and hex) of what a line body compressed by c writes for a fixed
// corpus of about 70 KiB, as two members (the second through a reset
// writer where c's writer resets, as a file's later members are). Two
// compressors that write other bytes have other digests; a build of the
// same library the same digest, whatever its module version says.
func Canary(c Compressor) (string, error) {
	corpus := canaryCorpus()
	half := len(corpus) / 2
	var out bytesOut
	b, err := Lines(c, nil).Open(&out, func(_ string, err error) error { return err })
	if err != nil {
		return "", err
	}
	if err := b.Write(corpus[:half]); err != nil {
		return "", err
	}
	if err := b.Sync(); err != nil {
		return "", err
	}
	if err := b.Write(corpus[half:]); err != nil {
		return "", err
	}
	if err := b.Finish(); err != nil {
		return "", err
	}
	return Digest(out), nil
}

// Digest is the form of a canary digest of out: "sha256:" and the hex of
// the first 16 bytes of its SHA-256.
func Digest(out []byte) string {
	sum := sha256.Sum256(out)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// bytesOut collects bytes.
type bytesOut []byte

func (b *bytesOut) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
