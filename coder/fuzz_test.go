package coder

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/s3once/s3once/internal/frame"
)

// addGoldenSeeds adds every golden file of a kind to the corpus, whole and as a
// bare payload (the fuzz bodies also try their input as a payload in a valid
// frame, which gets mutations past the checksum).
func addGoldenSeeds(f *testing.F, kind string) {
	paths, err := filepath.Glob(filepath.Join("testdata", kind+"_v*.bin"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no %s golden files (%v)", kind, err)
	}
	for _, p := range paths {
		b := loadGolden(f, p)
		f.Add(b)
		f.Add(b[frame.HeaderLen : len(b)-frame.TrailerLen])
	}
	f.Add([]byte{})
}

// FuzzDecodeResume: whatever DecodeResumeToken accepts re-encodes to the very same
// bytes (the encoding is canonical) and decodes to an equal token; whatever it
// refuses is refused with exactly one typed error; nothing panics.
func FuzzDecodeResume(f *testing.F) {
	addGoldenSeeds(f, "resume")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkResumeBytes(t, b)
		if framed, err := frameOf(resumeFraming, resumeVersion, b); err == nil {
			checkResumeBytes(t, framed)
		}
	})
}

func checkResumeBytes(t *testing.T, b []byte) {
	r, err := DecodeResumeToken(b)
	if err != nil {
		refusalKind(t, err)
		return
	}
	enc, err := EncodeResumeToken(r)
	if err != nil {
		t.Fatalf("a decoded token does not encode: %v", err)
	}
	if !bytes.Equal(enc, b) {
		t.Fatalf("re-encoding gave other bytes:\nin  %x\nout %x", b, enc)
	}
	again, err := DecodeResumeToken(enc)
	if err != nil || !reflect.DeepEqual(again, r) {
		t.Fatalf("re-encoded token decodes to %+v, %v; want %+v", again, err, r)
	}
}

// FuzzDecodeCommit is FuzzDecodeResume for commit tokens.
func FuzzDecodeCommit(f *testing.F) {
	addGoldenSeeds(f, "commit")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCommitBytes(t, b)
		if framed, err := frameOf(commitFraming, commitVersion, b); err == nil {
			checkCommitBytes(t, framed)
		}
	})
}

func checkCommitBytes(t *testing.T, b []byte) {
	c, err := DecodeCommitToken(b)
	if err != nil {
		refusalKind(t, err)
		return
	}
	enc, err := EncodeCommitToken(c)
	if err != nil {
		t.Fatalf("a decoded token does not encode: %v", err)
	}
	if !bytes.Equal(enc, b) {
		t.Fatalf("re-encoding gave other bytes:\nin  %x\nout %x", b, enc)
	}
	again, err := DecodeCommitToken(enc)
	if err != nil || !reflect.DeepEqual(again, c) {
		t.Fatalf("re-encoded token decodes to %+v, %v; want %+v", again, err, c)
	}
}

// FuzzUnframe: a frame Unframe accepts is rebuilt byte for byte from what
// Unframe returned, and any payload framed comes back unchanged.
func FuzzUnframe(f *testing.F) {
	for _, kind := range []string{"resume", "commit"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", kind+"_v*.bin"))
		for _, p := range paths {
			f.Add(loadGolden(f, p), byte(1))
		}
	}
	f.Add([]byte{}, byte(0))
	f.Fuzz(func(t *testing.T, b []byte, maxVersion byte) {
		v, p, err := resumeFraming.Unframe(maxVersion, b)
		if err != nil {
			refusalKind(t, refused(err)) // as the decoders return it
		} else {
			if v < 1 || v > maxVersion {
				t.Fatalf("accepted version %d, outside 1..%d", v, maxVersion)
			}
			again, err := frameOf(resumeFraming, v, p)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("Frame(Unframe(b)) = %x, %v; want %x", again, err, b)
			}
		}
		if maxVersion == 0 {
			return
		}
		framed, err := frameOf(resumeFraming, maxVersion, b)
		if err != nil {
			t.Fatalf("Frame: %v", err)
		}
		v, p, err = resumeFraming.Unframe(maxVersion, framed)
		if err != nil || v != maxVersion || !bytes.Equal(p, b) {
			t.Fatalf("Unframe(Frame(b)) = %d, %x, %v; want %d, %x", v, p, err, maxVersion, b)
		}
	})
}
