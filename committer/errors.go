package committer

import (
	"errors"
	"fmt"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/recoverable"
)

// Sentinel errors callers branch on with errors.Is. Each message ends in its
// stable code (package errcode), which survives a runner. A failure of one file's
// commit is a *recoverable.Error (bucket, key, upload, a hint for the operator)
// wrapping one of these, or one of recoverable's (ErrPartsChanged,
// ErrInvalidToken, ...), or the S3 error that ended the retries.
var (
	// ErrConflict: the server answered the completion with 409 (a
	// conflicting write, OperationAborted, ...) in every round the commit
	// had. The token's upload was left intact: commit the same token again
	// later.
	ErrConflict = errcode.New(errcode.Conflict, "completion kept meeting conflicting operations")
	// ErrRewriteRequired: after a 409 ConditionalRequestConflict the server
	// discarded the token's upload, and no object appeared at the key within
	// the settle window. The file must be written again under a new upload;
	// the commit of that rewrite then meets whatever won the key. This is
	// not ErrDataLost: nothing expired, the server asked for a rewrite, and a
	// rerun writes the same bytes.
	ErrRewriteRequired = errcode.New(errcode.RewriteRequired, "the server discarded the upload after a conflicting write; the file must be written again")
	// ErrKeyTaken: another object, with other bytes than the token describes,
	// is at the key. It is left intact; the token's upload is aborted.
	ErrKeyTaken = errcode.New(errcode.KeyTaken, "another object is at the key")
	// ErrDataLost: the token's upload is gone and nothing appeared at the key
	// within the settle window (Options.SettleTimeout): the file was never
	// committed and cannot be any more.
	ErrDataLost = errcode.New(errcode.DataLost, "upload and object are both gone")
	// ErrUnconfirmed: the server acknowledged the completion again and again,
	// yet the object never appeared at the key.
	ErrUnconfirmed = errcode.New(errcode.Unconfirmed, "completion acknowledged but no object at the key")
	// ErrConditionalWritesUnsupported: the server ignores or rejects
	// If-None-Match, so it cannot guarantee that a key is written once.
	ErrConditionalWritesUnsupported = errcode.New(errcode.ConditionalWritesUnsupported, "server does not honour If-None-Match")
)

// Hints for the operator.
const (
	hintConflict   = "the server kept answering 409 while other operations on this key or upload were in progress; the upload is intact: run CommitAfterRecovery again with the same token"
	hintRewrite    = "the server discarded the upload after a conflicting write to the key (409 ConditionalRequestConflict) and nothing settled at the key; write the file again under a new upload (a rerun writes the same bytes, and its commit compares them with whatever is at the key by then)"
	hintForged     = "the object at the key has the token's size and CRC64NVME but another multipart ETag for the same part layout, so its bytes differ: the CRC matched by accident or by design; inspect the object and who wrote it, delete it, and rerun"
	hintKeyTaken   = "the object at the key, left as it is, has other bytes than this file, whose upload was discarded: the input or the byte-affecting settings (Format, Compression or its library's version, Shards, MaxBatchBytes, MaxFileBytes, MaxFileRecords, CheckpointBytes) differ from those of the run that wrote the key; when the input or the settings change, write to a fresh prefix, or delete the folder's old files first to replace them"
	hintDataLost   = "the upload expired or was aborted (lifecycle rule, sweep, or another tool) before anyone committed it; rewrite the file from the source, and make sure sweep cutoffs and lifecycle rules exceed file lifetime plus checkpoint retention"
	hintUnconfirm  = "the server says the upload was completed but does not serve the object; check the server's health and logs, then run CommitAfterRecovery again with the same token"
	hintUnverified = "the server acknowledged the completion but the object could not be checked; run CommitAfterRecovery again with the same token"
	hintCondWrite  = "use a server that supports conditional writes (If-None-Match on PutObject and CompleteMultipartUpload), or set AllowUnconditional if a single writer per key is guaranteed some other way"
	hintMismatch   = "the server rejected the completion as inconsistent with the token (checksum or size); the parts may have been altered: rewrite the file from the source"
)

// fail wraps err into a *recoverable.Error for cr, unless it already is one.
func fail(op string, cr recoverable.CommitToken, err error, hint string) error {
	var e *recoverable.Error
	if errors.As(err, &e) {
		return err
	}
	return &recoverable.Error{Op: op, Bucket: cr.Bucket, Key: cr.Key, UploadID: cr.UploadID, Hint: hint, Err: err}
}

// validate checks the token's own consistency before any call is made.
func validate(cr recoverable.CommitToken) error {
	switch {
	case cr.Bucket == "" || cr.Key == "" || cr.UploadID == "":
		return fmt.Errorf("%w: bucket, key and upload ID are required", recoverable.ErrInvalidToken)
	case cr.Parts.Count < 1 || cr.Parts.Count > recoverable.MaxS3Parts:
		return fmt.Errorf("%w: part count %d outside [1, %d]", recoverable.ErrInvalidToken, cr.Parts.Count, recoverable.MaxS3Parts)
	case cr.Parts.Bytes < 0:
		return fmt.Errorf("%w: negative size %d", recoverable.ErrInvalidToken, cr.Parts.Bytes)
	}
	return nil
}
