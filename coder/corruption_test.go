package coder

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/recoverable"
)

// decoders maps a golden file's kind to its decoder, reduced to its error.
var decoders = map[string]func([]byte) error{
	"resume": func(b []byte) error { _, err := DecodeResumeToken(b); return err },
	"commit": func(b []byte) error { _, err := DecodeCommitToken(b); return err },
}

type goldenFile struct {
	path   string
	kind   string
	decode func([]byte) error
	b      []byte
}

func goldenFiles(t *testing.T) []goldenFile {
	t.Helper()
	var files []goldenFile
	for kind, decode := range decoders {
		paths, err := filepath.Glob(filepath.Join("testdata", kind+"_v*.bin"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			files = append(files, goldenFile{p, kind, decode, loadGolden(t, p)})
		}
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	return files
}

// Every change of a byte is caught: by the checksum, or, for the length field,
// as a truncation or a bound.
func TestEveryBitFlipIsRefused(t *testing.T) {
	for _, g := range goldenFiles(t) {
		for i := range g.b {
			for bit := range 8 {
				b := bytes.Clone(g.b)
				b[i] ^= 1 << bit
				err := g.decode(b)
				if err == nil {
					t.Fatalf("%s: flipping bit %d of byte %d decoded without error", g.path, bit, i)
				}
				refusalKind(t, err)
			}
			b := bytes.Clone(g.b)
			b[i] ^= 0xFF
			refusalKind(t, g.decode(b))
		}
	}
}

func TestEveryTruncationIsRefused(t *testing.T) {
	for _, g := range goldenFiles(t) {
		for n := range len(g.b) {
			err := g.decode(g.b[:n])
			if n >= 4 && n < len(g.b) {
				wantRefusal(t, err, ErrTruncated)
			} else {
				refusalKind(t, err)
			}
		}
		wantRefusal(t, g.decode(append(bytes.Clone(g.b), 0)), ErrMalformed)
		wantRefusal(t, g.decode(append(bytes.Clone(g.b), g.b...)), ErrMalformed)
	}
}

func TestWrongKindIsBadMagic(t *testing.T) {
	resume := loadGolden(t, goldenPath("resume", "inline"))
	commit := loadGolden(t, goldenPath("commit", "three_parts"))
	_, err := DecodeResumeToken(commit)
	wantRefusal(t, err, ErrBadMagic)
	_, err = DecodeCommitToken(resume)
	wantRefusal(t, err, ErrBadMagic)
	_, err = DecodeCommitToken([]byte(`{"Bucket":"b"}`))
	wantRefusal(t, err, ErrBadMagic)
	_, err = DecodeCommitToken(nil)
	wantRefusal(t, err, ErrTruncated)
}

func TestFrameErrors(t *testing.T) {
	golden := loadGolden(t, goldenPath("commit", "three_parts"))
	setLen := func(n uint32) []byte {
		b := bytes.Clone(golden)
		binary.BigEndian.PutUint32(b[5:9], n)
		return b
	}
	_, err := DecodeCommitToken(setLen(frame.MaxPayload + 1))
	wantRefusal(t, err, ErrTooLarge)
	_, err = DecodeCommitToken(setLen(^uint32(0)))
	wantRefusal(t, err, ErrTooLarge)
	_, err = DecodeCommitToken(setLen(uint32(len(golden)))) // longer than the input
	wantRefusal(t, err, ErrTruncated)
	_, err = DecodeCommitToken(setLen(3)) // shorter: the checksum is read from the wrong place
	wantRefusal(t, err, ErrChecksum)
}

// payload builds a payload field by field, to frame with a valid checksum.
type payload []byte

func (p payload) str(s string) payload { return appendString(p, s) }
func (p payload) u8(v byte) payload    { return append(p, v) }
func (p payload) u32(v uint32) payload { return appendU32(p, v) }
func (p payload) u64(v uint64) payload { return appendU64(p, v) }
func (p payload) raw(b ...byte) payload {
	return append(p, b...)
}
func (p payload) parts(count uint32, bytes uint64) payload {
	return p.u32(count).u64(bytes).raw(make([]byte, 32)...).u64(0)
}

// resumeHead is a valid resume payload up to and excluding the tail tag.
func resumeHead() payload {
	return payload(nil).str("b").str("k").str("u").str("").u64(8<<20).u64(1).parts(0, 0)
}

// TestPayloadErrors frames broken payloads with a valid checksum: the fields
// themselves must be refused.
func TestPayloadErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload payload
		kind    error
	}{
		{"valid", resumeHead().u8(tailEmpty), nil},
		{"empty payload", nil, ErrTruncated},
		{"ends in a length", payload(nil).raw(0x80), ErrTruncated},
		{"ends in a string", payload(nil).raw(5, 'a', 'b'), ErrTooLarge},
		{"ends in a fixed field", payload(nil).str("b").str("k").str("u").str("").u32(0), ErrTruncated},
		{"ends before the tail", resumeHead(), ErrTruncated},
		{"non-minimal length", payload(nil).raw(0x81, 0x00, 'b'), ErrMalformed},
		{"length overflows", payload(nil).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrTooLarge},
		{"huge length", payload(nil).raw(0xff, 0xff, 0xff, 0xff, 0x0f), ErrTooLarge},
		{"bucket above bound", payload(nil).str(string(make([]byte, MaxBucketLen+1))), ErrTooLarge},
		{"empty bucket", payload(nil).str("").str("k").str("u").str("").u64(8<<20).u64(1).parts(0, 0).u8(0), ErrMalformed},
		{"negative part size", payload(nil).str("b").str("k").str("u").str("").u64(1<<63).u64(1).parts(0, 0).u8(0), ErrMalformed},
		{"10,001 parts", payload(nil).str("b").str("k").str("u").str("").u64(8<<20).u64(1).parts(10001, 1).u8(0), ErrTooLarge},
		{"unknown tail tag", resumeHead().u8(3), ErrMalformed},
		{"empty inline tail", resumeHead().u8(tailInline).str("").u64(0), ErrMalformed},
		{"inline tail above bound", resumeHead().u8(tailInline).raw(binary.AppendUvarint(nil, MaxInlineTail+1)...), ErrTooLarge},
		{"inline tail", resumeHead().u8(tailInline).str("abc").u64(0), nil},
		{"side object without key", resumeHead().u8(tailObject).u64(5).u64(0).str(""), ErrMalformed},
		{"side object of nothing", resumeHead().u8(tailObject).u64(0).u64(0).str("o"), ErrMalformed},
		{"negative side object", resumeHead().u8(tailObject).u64(1 << 63).u64(0).str("o"), ErrMalformed},
		{"side object", resumeHead().u8(tailObject).u64(5).u64(0).str("u/00000000000000000001"), nil},
		{"side object outside its upload", resumeHead().u8(tailObject).u64(5).u64(0).str("o"), ErrMalformed},
		{"trailing byte", resumeHead().u8(tailEmpty).u8(0), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := frameOf(resumeFraming, 1, tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeResumeToken(b)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			wantRefusal(t, err, tt.kind)
		})
	}
}

// A commit token's payload is checked the same way.
func TestCommitPayloadErrors(t *testing.T) {
	head := func() payload { return payload(nil).str("b").str("k").str("u").str("") }
	for _, tt := range []struct {
		name    string
		payload payload
		kind    error
	}{
		{"valid", head().parts(0, 0), nil},
		{"ends in parts", head().u32(1), ErrTruncated},
		{"trailing byte", head().parts(1, 1).u8(0), ErrMalformed},
		{"too many bytes", head().parts(1, recoverable.MaxPartSize+1), ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := frameOf(commitFraming, 1, tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeCommitToken(b)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			wantRefusal(t, err, tt.kind)
		})
	}
}
