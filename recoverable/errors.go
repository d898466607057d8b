package recoverable

import (
	"errors"
	"fmt"

	"github.com/s3once/s3once/errcode"
)

// Sentinel errors callers branch on with errors.Is. Each message ends in its
// stable code (package errcode), which survives a runner. Errors returned by this
// package that concern a particular upload are *Error values wrapping one of them.
var (
	// ErrNoSuchUpload: the token's multipart upload no longer exists (aborted,
	// expired by a lifecycle rule, swept, or already completed).
	ErrNoSuchUpload = errcode.New(errcode.NoSuchUpload, "multipart upload does not exist")
	// ErrPartsChanged: the upload's parts differ from those the token recorded
	// (a part is missing, has another size, or was overwritten with other bytes).
	ErrPartsChanged = errcode.New(errcode.PartsChanged, "upload parts differ from the token")
	// ErrSideObjectMissing: the side object holding the token's tail is gone.
	ErrSideObjectMissing = errcode.New(errcode.SideObjectMissing, "tail side object is missing")
	// ErrTailCorrupt: the tail has the wrong length or checksum.
	ErrTailCorrupt = errcode.New(errcode.TailCorrupt, "tail length or checksum mismatch")
	// ErrPartLimit: writing on would need more parts than the writer allows;
	// roll the file (close it and open another) before this point.
	ErrPartLimit = errcode.New(errcode.PartLimit, "part limit reached")
	// ErrClosed: the stream was closed for commit or disposed.
	ErrClosed = errcode.New(errcode.Closed, "stream is closed")
	// ErrInvalidToken: the token is malformed (missing fields, impossible sizes).
	ErrInvalidToken = errcode.New(errcode.InvalidToken, "invalid token")
	// ErrInvalidOptions: the Writer's options break S3's limits or each other.
	ErrInvalidOptions = errcode.New(errcode.InvalidOptions, "invalid options")
)

// IsArtifactLost reports whether a recovery failed because something the
// token references is gone or altered: the upload (ErrNoSuchUpload), its
// parts (ErrPartsChanged) or its tail (ErrSideObjectMissing,
// ErrTailCorrupt). Asking again cannot help; the file can only be written
// again from its first byte, under a new upload. Transient failures
// (network, throttling, timeouts) and invalid tokens are not such losses.
func IsArtifactLost(err error) bool {
	return errors.Is(err, ErrNoSuchUpload) ||
		errors.Is(err, ErrSideObjectMissing) ||
		errors.Is(err, ErrTailCorrupt) ||
		errors.Is(err, ErrPartsChanged)
}

// Error is a failure tied to one file's upload. It names the bucket, key and
// upload, and says what an operator can do about it.
type Error struct {
	Op       string // the operation that failed: "write", "persist", "recover", ...
	Bucket   string
	Key      string
	UploadID string
	// Hint tells an operator what to do; may be empty.
	Hint string
	Err  error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("s3once %s s3://%s/%s", e.Op, e.Bucket, e.Key)
	if e.UploadID != "" {
		msg += " (upload " + e.UploadID + ")"
	}
	msg += ": " + e.Err.Error()
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Hints for the operator, shared by every place that raises the same condition.
const (
	hintUploadGone = "the checkpoint outlived its upload (check lifecycle rules and sweep cutoffs, which must exceed file lifetime plus checkpoint retention); the data since the last committed file must be rewritten from the source"
	hintParts      = "another writer changed the upload's parts (a zombie attempt or an outside tool); restore from an older checkpoint or rewrite the file from the source"
	hintTail       = "the side object of this checkpoint was deleted or altered; restore from another checkpoint or rewrite the file from the source"
	hintPartLimit  = "roll files before they reach PartSize x MaxParts bytes, or raise PartSize"
)
