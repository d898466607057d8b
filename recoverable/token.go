package recoverable

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/s3once/s3once/internal/ownkeys"
)

// PartList summarises the parts 1..Count of a multipart upload in constant space.
//
// Instead of every part's ETag (which makes a token grow with the file), a token
// keeps the part count, the bytes they hold, a digest chained over every part's
// (number, size, ETag) and the CRC64NVME of their concatenated bytes.
// Recover and commit list the upload's parts (ListParts) and check parts 1..Count
// against it before a byte is trusted: where the server lists every part's
// CRC64NVME, by their count, total size and chained CRC (ETags are not content:
// under SSE-KMS a re-upload of the same bytes gets a new one); where it lists no
// part checksums, by the digest. Either way a part that is missing, resized or
// overwritten with other bytes by a zombie writer is detected (see VerifyParts).
type PartList struct {
	// Count is the number of parts, numbered 1..Count.
	Count int
	// Bytes is the total size of the parts.
	Bytes int64
	// Digest is the chained SHA-256 over the parts, see Chain.
	Digest [32]byte
	// CRC is the CRC64NVME of the parts' bytes, in order.
	CRC uint64
}

// Part is one uploaded part as the server reports it.
type Part struct {
	Number int32
	Size   int64
	// ETag as returned by the server; surrounding quotes are ignored.
	ETag string
	// CRC is the part's CRC64NVME.
	CRC uint64
}

// Append folds the next part into the list. Parts must be appended in order.
// The digest covers each part's number, size and ETag; the CRC is folded
// separately, so a server that lists no part checksums can still be checked.
func (l PartList) Append(p Part) PartList {
	h := sha256.New()
	h.Write(l.Digest[:])
	var b [8 + 8]byte
	binary.BigEndian.PutUint64(b[0:], uint64(p.Number))
	binary.BigEndian.PutUint64(b[8:], uint64(p.Size))
	h.Write(b[:])
	h.Write([]byte(strings.Trim(p.ETag, `"`)))
	var next PartList
	h.Sum(next.Digest[:0])
	next.Count = l.Count + 1
	next.Bytes = l.Bytes + p.Size
	next.CRC = CRC64Combine(l.CRC, p.CRC, p.Size)
	return next
}

// Chain builds the PartList of parts, in order. It is exported for code
// that builds a token from parts it wrote or listed without a stream (the
// tests of coder and sink, and the benchmarks, make tokens of a given
// shape with it).
func Chain(parts []Part) PartList {
	var l PartList
	for _, p := range parts {
		l = l.Append(p)
	}
	return l
}

// Tail is the bytes written past the last part boundary at a persist.
type Tail struct {
	// Len is the tail's length in bytes.
	Len int64
	// CRC is the tail's CRC64NVME.
	CRC uint64
	// Object is the side object's key in the file's bucket, when the tail is
	// stored as a side object; empty when it is inline or empty.
	Object string
	// Inline holds the tail itself when it rides in the token.
	Inline []byte
}

// ResumeToken is the resume token of a stream: everything needed to carry
// on writing the file after a crash. It describes exactly the upload's parts
// 1..Parts.Count followed by the tail (invariant I1). Its size does not grow with
// the number of parts.
type ResumeToken struct {
	Bucket   string
	Key      string
	UploadID string
	// PartSize is the size of every part before the last; a recovered stream
	// keeps it, whatever the recovering Writer's options say.
	PartSize int64
	// StagingPrefix is the prefix under which the upload's side objects live.
	StagingPrefix string
	// Seq is the persist sequence number that made this token. Every Persist
	// attempt takes the next number, failed ones included, so numbers grow but
	// may skip.
	Seq   uint64
	Parts PartList
	Tail  Tail
}

// Size is the number of bytes the token describes (parts plus tail).
func (r ResumeToken) Size() int64 { return r.Parts.Bytes + r.Tail.Len }

// CRC is the CRC64NVME of all the bytes the token describes.
func (r ResumeToken) CRC() uint64 {
	return CRC64Combine(r.Parts.CRC, r.Tail.CRC, r.Tail.Len)
}

// CommitToken is the commit token of a closed stream: the upload, its parts
// (in constant space) and the full object's identity (size and CRC64NVME), which
// the committer checks against what it completes and what it finds at the key.
type CommitToken struct {
	Bucket        string
	Key           string
	UploadID      string
	StagingPrefix string
	Parts         PartList
}

// Size is the object's size in bytes.
func (c CommitToken) Size() int64 { return c.Parts.Bytes }

// CRC is the object's full-object CRC64NVME.
func (c CommitToken) CRC() uint64 { return c.Parts.CRC }

// ErrForeignStaging: the token's side objects lie under another staging prefix
// than the one this Writer (or committer) was configured with, so it refuses
// to delete them. It wraps ErrInvalidToken: such a token is not this
// configuration's to clean up.
var ErrForeignStaging = fmt.Errorf("%w: token names another staging prefix", ErrInvalidToken)

// hintForeignStaging tells an operator what to do about ErrForeignStaging.
const hintForeignStaging = "nothing was deleted; if the staging prefix was changed, run the sweep with the old --staging-prefix to remove what tokens taken before the change left there, otherwise the token comes from another job"

// SideObjectPrefix is the folder of every side object of an upload:
// <staging folder><escaped upload ID>/. A commit or a sweep deletes them all by
// listing it. See the internal ownkeys package, which defines every key
// s3once writes.
func SideObjectPrefix(stagingPrefix, uploadID string) string {
	return ownkeys.SideObjectPrefix(stagingPrefix, uploadID)
}

// SideObjectKey is the key of the side object written by persist number seq of
// the stream incarnation nonce. The nonce keeps two attempts that persist the same
// sequence number (a zombie and its successor) from overwriting each other's tail.
// It is exported for code that checks or builds a token's side-object key
// outside a stream (coder's tests hold a decoded token's key to this rule);
// internal/ownkeys holds the rule itself.
func SideObjectKey(stagingPrefix, uploadID string, seq uint64, nonce string) string {
	return ownkeys.SideObjectKey(stagingPrefix, uploadID, seq, nonce)
}
