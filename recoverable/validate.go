package recoverable

import (
	"errors"
	"fmt"

	"github.com/s3once/s3once/internal/ownkeys"
)

// Validate checks the token's internal consistency (not the upload): among
// others, that a side-object tail lies in SideObjectPrefix(StagingPrefix,
// UploadID) and is named as the stream names side objects. Recover and Cleanup
// call it, and so do the coder's decoders, so a corrupted or hostile token
// never makes s3once read or delete another key.
func (rr ResumeToken) Validate() error {
	switch {
	case rr.Bucket == "" || rr.Key == "" || rr.UploadID == "":
		return fmt.Errorf("%w: bucket, key and upload ID are required", ErrInvalidToken)
	case rr.PartSize < MinPartSize || rr.PartSize > MaxPartSize:
		return fmt.Errorf("%w: part size %d outside S3's limits", ErrInvalidToken, rr.PartSize)
	case rr.Parts.Count < 0 || rr.Parts.Count > MaxS3Parts:
		return fmt.Errorf("%w: part count %d", ErrInvalidToken, rr.Parts.Count)
	case rr.Parts.Bytes != int64(rr.Parts.Count)*rr.PartSize:
		return fmt.Errorf("%w: %d parts of %d bytes cannot hold %d bytes", ErrInvalidToken, rr.Parts.Count, rr.PartSize, rr.Parts.Bytes)
	case rr.Tail.Len < 0 || rr.Tail.Len > rr.PartSize:
		return fmt.Errorf("%w: tail length %d", ErrInvalidToken, rr.Tail.Len)
	case rr.Tail.Object != "" && rr.Tail.Inline != nil:
		return fmt.Errorf("%w: tail is both inline and a side object", ErrInvalidToken)
	case rr.Tail.Object == "" && int64(len(rr.Tail.Inline)) != rr.Tail.Len:
		return fmt.Errorf("%w: inline tail holds %d bytes, token says %d", ErrInvalidToken, len(rr.Tail.Inline), rr.Tail.Len)
	case rr.Tail.Len == 0 && rr.Tail.CRC != 0:
		return fmt.Errorf("%w: empty tail with a checksum", ErrInvalidToken)
	}
	return checkTailObject(rr.StagingPrefix, rr.UploadID, rr.Tail.Object)
}

func (rr ResumeToken) fail(op string, err error, hint string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Op: op, Bucket: rr.Bucket, Key: rr.Key, UploadID: rr.UploadID, Hint: hint, Err: err}
}

// checkTailObject refuses a side-object key that is not a side object of the
// token's own upload: a corrupted or hostile token must never make Recover read,
// or Cleanup delete, any other key.
func checkTailObject(stagingPrefix, uploadID, object string) error {
	if object == "" || ownkeys.IsSideObjectOf(stagingPrefix, uploadID, object) {
		return nil
	}
	return fmt.Errorf("%w: tail object %q is not a side object under %q", ErrInvalidToken, object, SideObjectPrefix(stagingPrefix, uploadID))
}
