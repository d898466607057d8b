package recoverable

import (
	"math/rand/v2"
	"testing"
)

func TestCRC64CheckValue(t *testing.T) {
	// The catalogued check value of CRC-64/NVME.
	if got := CRC64([]byte("123456789")); got != 0xae8b14860a799888 {
		t.Fatalf("CRC64(123456789) = %#x, want 0xae8b14860a799888", got)
	}
}

func TestCRC64Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for i := 0; i < 500; i++ {
		n := r.IntN(len(buf))
		cut := 0
		if n > 0 {
			cut = r.IntN(n + 1)
		}
		a, b := buf[:cut], buf[cut:n]
		got := CRC64Combine(CRC64(a), CRC64(b), int64(len(b)))
		if want := CRC64(buf[:n]); got != want {
			t.Fatalf("combine at %d/%d = %#x, want %#x", cut, n, got, want)
		}
	}
}
