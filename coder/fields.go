package coder

import (
	"encoding/binary"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/recoverable"
)

// Appending fields to a payload. Callers validate values first: these never fail.

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// appendBytes appends a uvarint length and then p.
func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// appendString appends a uvarint length and then s.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendPartList appends the fixed-size encoding of l, so a token's size never
// depends on the number of parts.
func appendPartList(b []byte, l recoverable.PartList) []byte {
	b = appendU32(b, uint32(l.Count))
	b = appendU64(b, uint64(l.Bytes))
	b = append(b, l.Digest[:]...)
	return appendU64(b, l.CRC)
}

// readPartList reads the fixed-size encoding appendPartList writes.
func readPartList(r *frame.Reader, field string) recoverable.PartList {
	var l recoverable.PartList
	count := r.U32(field + ".Count")
	if count > recoverable.MaxS3Parts {
		r.Fail(invalid(ErrTooLarge, "%s %s.Count is %d, S3 allows %d parts", r.Kind(), field, count, recoverable.MaxS3Parts))
	}
	l.Count = int(count)
	l.Bytes = r.I64(field + ".Bytes")
	copy(l.Digest[:], r.Take(field+".Digest", len(l.Digest)))
	l.CRC = r.U64(field + ".CRC")
	return l
}
