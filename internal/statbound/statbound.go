// Package statbound shortens column statistics to a byte limit while
// keeping them bounds: a lower bound is cut to a prefix, which sorts before
// or equal to the value, and an upper bound is cut and raised, so that it
// sorts after or equal to it. Both compare bytewise (unsigned), the order
// of Parquet's byte-array statistics and of Iceberg's string and binary
// bounds. A valid UTF-8 value is cut between characters and stays valid
// UTF-8. The sink bounds its Parquet footers with it, and the Iceberg
// table stage its data file bounds.
package statbound

import (
	"bytes"
	"unicode/utf8"
)

// Lower returns a prefix of v of at most limit bytes, which sorts before
// or equal to v. A valid UTF-8 value is cut between characters.
func Lower(v []byte, limit int) []byte {
	if len(v) <= limit {
		return v
	}
	if utf8.Valid(v) {
		return bytes.Clone(v[:runePrefix(v, limit)])
	}
	return bytes.Clone(v[:limit])
}

// Upper returns a value of at most limit bytes that sorts after or equal
// to v, bytewise: v itself when short enough, else a prefix with its last
// byte (for valid UTF-8, its last character) raised by one. ok is false
// when there is none (the prefix is all 0xff bytes, or all U+10FFFF).
func Upper(v []byte, limit int) (_ []byte, ok bool) {
	if len(v) <= limit {
		return v, true
	}
	if utf8.Valid(v) {
		p := v[:runePrefix(v, limit)]
		for len(p) > 0 {
			r, size := utf8.DecodeLastRune(p)
			p = p[:len(p)-size]
			next := r + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
				next = 0xE000
			}
			if next > utf8.MaxRune || len(p)+utf8.RuneLen(next) > limit {
				continue
			}
			return utf8.AppendRune(bytes.Clone(p), next), true
		}
		return nil, false
	}
	p := bytes.Clone(v[:limit])
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			p[i]++
			return p[:i+1], true
		}
	}
	return nil, false
}

// runePrefix is the length of the longest prefix of v, valid UTF-8, of at
// most limit bytes that ends between characters.
func runePrefix(v []byte, limit int) int {
	n := limit
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return n
}
