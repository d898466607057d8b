package bench

import (
	"crypto/md5"
	"crypto/sha256"
	"hash/crc32"
	"hash/crc64"
	"testing"

	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/testkit/benchkit"
)

// BenchmarkHash measures, on one 8 MiB part, the per-byte work that an
// upload does on the client or on the server: the stream's CRC64NVME
// (crc64nvme.Checksum, carry-less multiply), the same checksum through the
// table-driven hash/crc64 the stream used before, the CRC32 the SDK's uploader sends by default, the SHA-256 the SDK computes to
// sign a body on a plain-http endpoint (and the server to check it), the MD5
// a server computes for a part's ETag, and a copy into a part buffer.
func BenchmarkHash(b *testing.B) {
	part := benchkit.Fill(make([]byte, partSize))
	dst := make([]byte, partSize)
	for _, h := range []struct {
		name string
		fn   func()
	}{
		{"crc64nvme", func() { crc64nvme.Checksum(part) }},
		{"crc64nvme-stdlib", func() { crc64.Checksum(part, nvmeTable) }},
		{"crc32", func() { crc32.ChecksumIEEE(part) }},
		{"sha256", func() { sha256.Sum256(part) }},
		{"md5", func() { md5.Sum(part) }},
		{"copy", func() { copy(dst, part) }},
	} {
		b.Run("algo="+h.name, func(b *testing.B) {
			b.SetBytes(partSize)
			for b.Loop() {
				h.fn()
			}
		})
	}
}

// nvmeTable is hash/crc64's table for CRC-64/NVME (the reversed polynomial).
var nvmeTable = crc64.MakeTable(0x9a6c9329ac4bc9b5)
