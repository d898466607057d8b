package coder

import (
	"bytes"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/recoverable"
)

const (
	resumeKind = "resume token"
	// resumeVersion is the version EncodeResumeToken writes and the newest one
	// DecodeResumeToken reads.
	resumeVersion byte = 1
)

var (
	resumeMagic   = [4]byte{'S', '3', 'O', 'R'}
	resumeFraming = frame.Framing{Magic: resumeMagic, Kind: resumeKind}
)

// How a resume token's tail is stored: the tag that precedes its fields.
const (
	tailEmpty  byte = 0 // no tail: Len 0, CRC 0
	tailInline byte = 1 // the bytes ride in the token
	tailObject byte = 2 // the bytes are in a side object
)

// EncodeResumeToken returns the encoding of r in the newest version. Equal tokens
// give equal bytes.
//
// A tail whose Inline is empty but not nil is encoded as no inline tail; every
// other field round-trips exactly through DecodeResumeToken. EncodeResumeToken refuses,
// with an error matching recoverable.ErrInvalidToken and ErrTooLarge or
// ErrMalformed, a token that exceeds the format's bounds or that no stream can
// make (see FORMAT.md): what it writes, DecodeResumeToken can read.
func EncodeResumeToken(r recoverable.ResumeToken) ([]byte, error) {
	b, err := encodeResume(r)
	return b, refused(err)
}

func encodeResume(r recoverable.ResumeToken) ([]byte, error) {
	if err := checkResume(r); err != nil {
		return nil, err
	}
	hint := 128 + len(r.Bucket) + len(r.Key) + len(r.UploadID) + len(r.StagingPrefix) + len(r.Tail.Object) + len(r.Tail.Inline)
	b, err := resumeFraming.Begin(resumeVersion, hint)
	if err != nil {
		return nil, err
	}
	b = appendString(b, r.Bucket)
	b = appendString(b, r.Key)
	b = appendString(b, r.UploadID)
	b = appendString(b, r.StagingPrefix)
	b = appendU64(b, uint64(r.PartSize))
	b = appendU64(b, r.Seq)
	b = appendPartList(b, r.Parts)
	switch {
	case len(r.Tail.Inline) > 0:
		b = append(b, tailInline)
		b = appendBytes(b, r.Tail.Inline)
		b = appendU64(b, r.Tail.CRC)
	case r.Tail.Object != "":
		b = append(b, tailObject)
		b = appendU64(b, uint64(r.Tail.Len))
		b = appendU64(b, r.Tail.CRC)
		b = appendString(b, r.Tail.Object)
	default:
		b = append(b, tailEmpty)
	}
	return resumeFraming.End(b)
}

// DecodeResumeToken decodes a resume token written by EncodeResumeToken of this or any
// earlier release. The result does not alias b; its Tail.Inline is nil unless
// the tail is inline.
//
// Any other input gives an error matching recoverable.ErrInvalidToken and one
// of ErrBadMagic, ErrVersion (a *VersionError), ErrTruncated, ErrChecksum,
// ErrTooLarge or ErrMalformed; a returned token always satisfies the checks
// EncodeResumeToken makes.
func DecodeResumeToken(b []byte) (recoverable.ResumeToken, error) {
	r, err := decodeResume(b)
	return r, refused(err)
}

func decodeResume(b []byte) (recoverable.ResumeToken, error) {
	version, payload, err := resumeFraming.Unframe(resumeVersion, b)
	if err != nil {
		return recoverable.ResumeToken{}, err
	}
	var r recoverable.ResumeToken
	switch version {
	case 1:
		r, err = decodeResumeV1(payload)
	default:
		err = &VersionError{Kind: resumeKind, Got: version, Max: resumeVersion}
	}
	if err == nil {
		err = checkResume(r)
	}
	if err != nil {
		return recoverable.ResumeToken{}, err
	}
	return r, nil
}

func decodeResumeV1(payload []byte) (recoverable.ResumeToken, error) {
	d := frame.NewReader(resumeKind, payload)
	var r recoverable.ResumeToken
	r.Bucket = d.String("Bucket", 1, MaxBucketLen)
	r.Key = d.String("Key", 1, MaxKeyLen)
	r.UploadID = d.String("UploadID", 1, MaxUploadIDLen)
	r.StagingPrefix = d.String("StagingPrefix", 0, MaxKeyLen)
	r.PartSize = d.I64("PartSize")
	r.Seq = d.U64("Seq")
	r.Parts = readPartList(d, "Parts")
	switch tag := d.U8("tail tag"); tag {
	case tailEmpty:
	case tailInline:
		r.Tail.Inline = bytes.Clone(d.Bytes("Tail.Inline", 1, MaxInlineTail))
		r.Tail.Len = int64(len(r.Tail.Inline))
		r.Tail.CRC = d.U64("Tail.CRC")
	case tailObject:
		r.Tail.Len = d.I64("Tail.Len")
		r.Tail.CRC = d.U64("Tail.CRC")
		r.Tail.Object = d.String("Tail.Object", 1, MaxKeyLen)
	default:
		d.Fail(invalid(ErrMalformed, "%s tail tag %d is unknown", resumeKind, tag))
	}
	return r, d.Finish()
}

// checkResume checks the bounds of the format and the invariants every token a
// stream makes satisfies.
func checkResume(r recoverable.ResumeToken) error {
	const kind = resumeKind
	if err := checkObjectID(kind, r.Bucket, r.Key, r.UploadID, r.StagingPrefix); err != nil {
		return err
	}
	switch {
	case r.PartSize < recoverable.MinPartSize || r.PartSize > recoverable.MaxPartSize:
		return invalid(ErrMalformed, "%s PartSize %d is outside S3's limits [%d, %d]", kind, r.PartSize, recoverable.MinPartSize, int64(recoverable.MaxPartSize))
	case r.Seq == 0:
		return invalid(ErrMalformed, "%s Seq is 0; persist numbers start at 1", kind)
	}
	if err := checkPartList(kind, r.Parts); err != nil {
		return err
	}
	if err := checkTail(r.Tail); err != nil {
		return err
	}
	// A side object is only ever a side object of the token's own upload: a
	// token that names any other key (a damaged or hostile checkpoint) must not
	// reach Recover or Cleanup, which would read or delete it.
	if o := r.Tail.Object; o != "" && !ownkeys.IsSideObjectOf(r.StagingPrefix, r.UploadID, o) {
		return invalid(ErrMalformed, "%s Tail.Object %q is not a side object under %q", kind, o, ownkeys.SideObjectPrefix(r.StagingPrefix, r.UploadID))
	}
	return nil
}

// checkTail checks that a tail is exactly one of: empty, inline, or in a side
// object, with a length that matches.
func checkTail(t recoverable.Tail) error {
	const kind = resumeKind
	switch {
	case t.Len < 0:
		return invalid(ErrMalformed, "%s Tail.Len %d is negative", kind, t.Len)
	case t.Len > recoverable.MaxPartSize:
		return invalid(ErrTooLarge, "%s Tail.Len %d exceeds the largest part, %d bytes", kind, t.Len, int64(recoverable.MaxPartSize))
	case len(t.Inline) > 0 && t.Object != "":
		return invalid(ErrMalformed, "%s tail is both inline and in side object %q", kind, t.Object)
	case len(t.Inline) > MaxInlineTail:
		return invalid(ErrTooLarge, "%s inline tail of %d bytes exceeds the bound of %d", kind, len(t.Inline), MaxInlineTail)
	case len(t.Inline) > 0 && t.Len != int64(len(t.Inline)):
		return invalid(ErrMalformed, "%s Tail.Len is %d but the inline tail holds %d bytes", kind, t.Len, len(t.Inline))
	case t.Object != "" && t.Len == 0:
		return invalid(ErrMalformed, "%s tail has side object %q but Len 0", kind, t.Object)
	case len(t.Inline) == 0 && t.Object == "" && (t.Len != 0 || t.CRC != 0):
		return invalid(ErrMalformed, "%s tail has Len %d and CRC %016x but neither inline bytes nor a side object", kind, t.Len, t.CRC)
	}
	return checkString(kind, "Tail.Object", t.Object, 0, MaxKeyLen)
}
