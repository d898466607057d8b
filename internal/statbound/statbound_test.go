package statbound

import "testing"

func TestLowerUpper(t *testing.T) {
	for _, tc := range []struct {
		v, min, max string
		ok          bool
	}{
		{"abc", "abc", "abc", true},
		{"abcdefgh", "abcd", "abce", true},
		{"abc\xff\xffxyz", "abc\xff", "abd", true},              // not UTF-8: bytewise
		{"\xff\xff\xff\xff\xff", "\xff\xff\xff\xff", "", false}, // no max of 4 bytes
		{"aéééé", "aé", "aê", true},                             // cut between characters: 'é' is two bytes
		{"abc\u007fx", "abc\u007f", "abd", true},                // U+0080 takes two bytes: drop the U+007F, raise 'c'
		{"a\U0010FFFFbc", "a", "b", true},                       // no character after U+10FFFF
		{"\U0010FFFF\U0010FFFF", "\U0010FFFF", "", false},
		{"\ud7ff\ud7ffx", "\ud7ff", "\ue000", true}, // past the surrogates
		{"ab\ud7ffxx", "ab", "ac", true},            // U+D7FF: three bytes, past the limit
	} {
		const limit = 4
		gotMin := string(Lower([]byte(tc.v), limit))
		gotMax, ok := Upper([]byte(tc.v), limit)
		wantMax := tc.max
		if gotMin != tc.min || ok != tc.ok || (ok && string(gotMax) != wantMax) {
			t.Errorf("%q: min %q, max %q (%v); want %q, %q (%v)", tc.v, gotMin, gotMax, ok, tc.min, wantMax, tc.ok)
		}
		if len(gotMin) > limit || len(gotMax) > limit || gotMin > tc.v || (ok && string(gotMax) < tc.v) {
			t.Errorf("%q: [%q, %q] is not a bound of at most %d bytes", tc.v, gotMin, gotMax, limit)
		}
	}
}
