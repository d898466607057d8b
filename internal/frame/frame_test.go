package frame

import (
	"bytes"
	"errors"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

var testMagic = [4]byte{'T', 'E', 'S', 'T'}

func TestFrameRoundTrip(t *testing.T) {
	for _, p := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte{0xAB}, MaxPayload)} {
		for _, v := range []byte{1, 7, 255} {
			b, err := frameOf(testMagic, v, p)
			if err != nil {
				t.Fatalf("Frame: %v", err)
			}
			if len(b) != len(p)+Overhead {
				t.Fatalf("frame of %d payload bytes is %d bytes, want %d", len(p), len(b), len(p)+Overhead)
			}
			gotV, gotP, err := unframe(testMagic, 255, b)
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
	_, err := frameOf(testMagic, 0, nil)
	wantRefusal(t, err, ErrMalformed)
	_, err = frameOf(testMagic, 1, make([]byte, MaxPayload+1))
	wantRefusal(t, err, ErrTooLarge)
}

func TestFrameDoesNotAlias(t *testing.T) {
	p := []byte("payload")
	b, err := frameOf(testMagic, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	p[0] = 'X'
	if _, got, _ := unframe(testMagic, 1, b); string(got) != "payload" {
		t.Fatalf("frame follows a change of its payload: %q", got)
	}
}

func TestUnframeVersions(t *testing.T) {
	b, err := frameOf(testMagic, 3, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := unframe(testMagic, 3, b); err != nil || v != 3 {
		t.Fatalf("Unframe with max 3: %d, %v", v, err)
	}
	_, _, err = unframe(testMagic, 2, b)
	wantRefusal(t, err, ErrVersion)
	_, _, err = unframe([4]byte{'T', 'E', 'S', 'X'}, 3, b)
	wantRefusal(t, err, ErrBadMagic)
}

// frameOf frames payload p as version v under magic, with the default bound.
func frameOf(magic [4]byte, v byte, p []byte) ([]byte, error) {
	f := Framing{Magic: magic}
	b, err := f.Begin(v, len(p))
	if err != nil {
		return nil, err
	}
	return f.End(append(b, p...))
}

// unframe is Unframe of magic with the default bound.
func unframe(magic [4]byte, maxVersion byte, b []byte) (byte, []byte, error) {
	return Framing{Magic: magic}.Unframe(maxVersion, b)
}

// wantRefusal checks that err matches exactly one sentinel, kind, and not
// recoverable.ErrInvalidToken: what a refused value is, its user says.
func wantRefusal(t *testing.T, err, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if errors.Is(err, recoverable.ErrInvalidToken) {
		t.Fatalf("error %v matches recoverable.ErrInvalidToken: the frame says what a value is", err)
	}
	var found []error
	for _, s := range []error{ErrBadMagic, ErrVersion, ErrTruncated, ErrChecksum, ErrTooLarge, ErrMalformed} {
		if errors.Is(err, s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 || found[0] != kind {
		t.Fatalf("error %q matches %v, want exactly %v", err, found, kind)
	}
}
