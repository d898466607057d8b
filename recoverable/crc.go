package recoverable

// crc64NVMEPoly is the CRC-64/NVME polynomial in reversed (LSB-first) form, the
// checksum S3 computes over whole objects (ChecksumCRC64NVME).
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

// The checksum itself comes from a carry-less-multiply implementation (an
// order of magnitude faster than the table-driven one in hash/crc64, which
// would otherwise take a large share of a stream's CPU); crc_test.go holds it
// to the standard library's result.

// CRC64Combine returns the CRC64NVME of A followed by B, given crcA, crcB and the
// length of B, without reading the bytes again. Each part's checksum is computed
// once, by Write as it fills the part, and folded into the file's running
// checksum here.
//
// It is exported for code outside the package that chains part checksums
// into a file's CRC as the stream does (the benchmarks in bench do), so
// that none needs a copy of the arithmetic.
func CRC64Combine(crcA, crcB uint64, lenB int64) uint64 {
	if lenB <= 0 {
		return crcA ^ crcB
	}
	return mulModP(xPow8n(lenB), crcA) ^ crcB
}

// The polynomial arithmetic below works on reflected 64-bit polynomials over
// GF(2): bit 63 holds x^0, bit 0 holds x^63.

// mulModP returns a*b modulo the CRC polynomial.
func mulModP(a, b uint64) uint64 {
	var p uint64
	for m := uint64(1) << 63; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crc64NVMEPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2n[k] is x^(2^k) modulo the polynomial.
var x2n = func() (t [64]uint64) {
	p := uint64(1) << 62 // x^1
	for k := range t {
		t[k] = p
		p = mulModP(p, p)
	}
	return t
}()

// xPow8n returns x^(8n) modulo the polynomial: the operator that appends n zero
// bytes to a CRC register.
func xPow8n(n int64) uint64 {
	p := uint64(1) << 63 // x^0
	for k := 3; n != 0; k++ {
		if n&1 != 0 {
			p = mulModP(x2n[k&63], p)
		}
		n >>= 1
	}
	return p
}
