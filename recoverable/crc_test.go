package recoverable

import (
	"hash/crc64"
	"math/rand/v2"
	"testing"

	"github.com/minio/crc64nvme"
)

// TestCRC64MatchesStandardLibrary holds the fast implementation to the
// table-driven one of the standard library, at every length up to a few
// hundred bytes (where vector code switches paths) and at large ones.
func TestCRC64MatchesStandardLibrary(t *testing.T) {
	tab := crc64.MakeTable(crc64NVMEPoly)
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 1<<20+13)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	lengths := []int{len(buf) - 7, 1 << 20, 65536 + 7}
	for n := 0; n <= 600; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, off := range []int{0, 1, 7} {
			p := buf[off : off+n]
			if got, want := crc64nvme.Checksum(p), crc64.Checksum(p, tab); got != want {
				t.Fatalf("CRC64 of %d bytes at offset %d = %#x, want %#x", n, off, got, want)
			}
			if got, want := crc64nvme.Update(0x1234, p), crc64.Update(0x1234, tab, p); got != want {
				t.Fatalf("Update of %d bytes = %#x, want %#x", n, got, want)
			}
		}
	}
}

func TestCRC64CheckValue(t *testing.T) {
	// The catalogued check value of CRC-64/NVME.
	if got := crc64nvme.Checksum([]byte("123456789")); got != 0xae8b14860a799888 {
		t.Fatalf("crc64nvme.Checksum(123456789) = %#x, want 0xae8b14860a799888", got)
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
		got := CRC64Combine(crc64nvme.Checksum(a), crc64nvme.Checksum(b), int64(len(b)))
		if want := crc64nvme.Checksum(buf[:n]); got != want {
			t.Fatalf("combine at %d/%d = %#x, want %#x", cut, n, got, want)
		}
	}
}
