package coder

import (
	"bytes"
	"testing"
)

var testMagic = [4]byte{'T', 'E', 'S', 'T'}

func TestFrameRoundTrip(t *testing.T) {
	for _, p := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte{0xAB}, MaxPayload)} {
		for _, v := range []byte{1, 7, 255} {
			b, err := Frame(testMagic, v, p)
			if err != nil {
				t.Fatalf("Frame: %v", err)
			}
			if len(b) != len(p)+Overhead {
				t.Fatalf("frame of %d payload bytes is %d bytes, want %d", len(p), len(b), len(p)+Overhead)
			}
			gotV, gotP, err := Unframe(testMagic, 255, b)
			if err != nil {
				t.Fatalf("Unframe: %v", err)
			}
			if gotV != v || !bytes.Equal(gotP, p) {
				t.Fatalf("Unframe gave version %d and %d bytes, want %d and %d", gotV, len(gotP), v, len(p))
			}
		}
	}
}

func TestFrameRefuses(t *testing.T) {
	_, err := Frame(testMagic, 0, nil)
	wantRefusal(t, err, ErrMalformed)
	_, err = Frame(testMagic, 1, make([]byte, MaxPayload+1))
	wantRefusal(t, err, ErrTooLarge)
}

func TestFrameDoesNotAlias(t *testing.T) {
	p := []byte("payload")
	b, err := Frame(testMagic, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	p[0] = 'X'
	if _, got, _ := Unframe(testMagic, 1, b); string(got) != "payload" {
		t.Fatalf("frame follows a change of its payload: %q", got)
	}
}

func TestUnframeVersions(t *testing.T) {
	b, err := Frame(testMagic, 3, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := Unframe(testMagic, 3, b); err != nil || v != 3 {
		t.Fatalf("Unframe with max 3: %d, %v", v, err)
	}
	_, _, err = Unframe(testMagic, 2, b)
	wantRefusal(t, err, ErrVersion)
	_, _, err = Unframe([4]byte{'T', 'E', 'S', 'X'}, 3, b)
	wantRefusal(t, err, ErrBadMagic)
}
