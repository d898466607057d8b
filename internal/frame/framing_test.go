package frame

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestFramingLargePayload frames a payload past MaxPayload under a bound of
// the caller's, in place: the payload is appended once into the frame, and
// Unframe hands it back as a sub-slice of its input.
func TestFramingLargePayload(t *testing.T) {
	f := Framing{Magic: testMagic, MaxPayload: 3 << 20}
	payload := bytes.Repeat([]byte("0123456789abcdef"), (2<<20)/16+1)
	b, err := f.Begin(2, len(payload))
	if err != nil {
		t.Fatal(err)
	}
	start := cap(b)
	b = append(b, payload...)
	if cap(b) != start {
		t.Fatalf("the frame grew from %d to %d bytes of capacity: Begin did not make room", start, cap(b))
	}
	b, err = f.End(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != len(payload)+Overhead {
		t.Fatalf("frame of %d bytes, want %d", len(b), len(payload)+Overhead)
	}
	v, got, err := f.Unframe(2, b)
	if err != nil {
		t.Fatal(err)
	}
	if v != 2 || !bytes.Equal(got, payload) {
		t.Fatalf("version %d, %d payload bytes; want 2, %d", v, len(got), len(payload))
	}
	if &got[0] != &b[HeaderLen] {
		t.Fatal("Unframe copied the payload")
	}
	// The package's own bound still refuses it.
	_, _, err = unframe(testMagic, 2, b)
	wantRefusal(t, err, ErrTooLarge)
	// And a frame under the default bound reads under the larger bound alike.
	small, err := frameOf(testMagic, 1, []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := f.Unframe(1, small); err != nil || string(p) != "p" {
		t.Fatalf("Unframe of a small frame: %q, %v", p, err)
	}
}

func TestFramingRefuses(t *testing.T) {
	f := Framing{Magic: testMagic, MaxPayload: 100}
	_, err := f.Begin(0, 10)
	wantRefusal(t, err, ErrMalformed)
	b, err := f.Begin(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.End(append(b, make([]byte, 101)...))
	wantRefusal(t, err, ErrTooLarge)
	_, err = f.End([]byte("TES"))
	wantRefusal(t, err, ErrMalformed)
	_, err = f.End(append([]byte("XXXX\x01"), 0, 0, 0, 0))
	wantRefusal(t, err, ErrMalformed)
	// A declared length past the bound is refused before anything is read.
	good, err := f.End(append(b, make([]byte, 100)...))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Clone(good)
	binary.BigEndian.PutUint32(big[5:9], 101)
	_, _, err = f.Unframe(1, big)
	wantRefusal(t, err, ErrTooLarge)
	// A zero bound means MaxPayload; a bound past the length field's reach
	// is capped to it.
	if got := (Framing{}).bound(); got != MaxPayload {
		t.Errorf("zero bound = %d, want %d", got, MaxPayload)
	}
	if got := (Framing{MaxPayload: 1 << 40}).bound(); got != MaxLength {
		t.Errorf("bound 1 TiB = %d, want %d", got, int64(MaxLength))
	}
}

func TestReader(t *testing.T) {
	p := binary.AppendUvarint(nil, 300)
	p = append(binary.AppendUvarint(p, 3), "abc"...)
	r := NewReader("test value", p)
	if v := r.Uvarint("n", 1000); v != 300 {
		t.Fatalf("Uvarint = %d", v)
	}
	if s := r.Bytes("s", 0, 3); string(s) != "abc" || &s[0] != &p[len(p)-3] || cap(s) != 3 {
		t.Fatalf("Bytes = %q (cap %d), want an aliasing slice of \"abc\"", s, cap(s))
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    []byte
		read func(*Reader)
		want error
	}{
		{"over bound", binary.AppendUvarint(nil, 301), func(r *Reader) { r.Uvarint("n", 300) }, ErrTooLarge},
		{"not minimal", []byte{0x81, 0x00}, func(r *Reader) { r.Uvarint("n", 300) }, ErrMalformed},
		{"cut", []byte{0x81}, func(r *Reader) { r.Uvarint("n", 300) }, ErrTruncated},
		{"string past the end", []byte{5, 'a'}, func(r *Reader) { r.Bytes("s", 0, 10) }, ErrTooLarge},
		{"string over bound", []byte{5, 'a', 'b', 'c', 'd', 'e'}, func(r *Reader) { r.String("s", 0, 4) }, ErrTooLarge},
		{"left over", []byte{1, 2}, func(r *Reader) { r.Uvarint("n", 10) }, ErrMalformed},
	} {
		r := NewReader("test value", c.p)
		c.read(r)
		err := r.Finish()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		wantRefusal(t, err, c.want)
	}
}
