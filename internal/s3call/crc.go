package s3call

import (
	"encoding/base64"
	"encoding/binary"
)

// EncodeCRC renders a CRC64NVME the way S3 headers carry it: the checksum's
// eight bytes, big-endian, in standard base64.
func EncodeCRC(c uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

// DecodeCRC parses a CRC64NVME header value; ok is false when s is empty or
// not one.
func DecodeCRC(s string) (crc uint64, ok bool) {
	if s == "" {
		return 0, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}
