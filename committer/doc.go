// Package committer turns closed recoverable streams into objects, exactly once,
// and cleans up what writers leave behind.
//
// # Commit protocol
//
// A file is a multipart upload plus a commit token
// (recoverable.CommitRecoverable) that names the upload and describes the file
// in constant space: its parts' count, sizes and ETags (as a digest), and the
// whole file's size and CRC64NVME. The file "is committed" when its key holds
// an object of exactly that size and CRC64NVME; nothing else counts.
//
// Commit and CommitAfterRecovery both run the same protocol:
//
//  1. Preflight, once per bucket and Committer: a probe object is written twice
//     under the staging prefix with If-None-Match: *. The second write must be
//     refused; a server that accepts it cannot keep a key written once, and
//     commits there fail with ErrConditionalWritesUnsupported unless the caller
//     opted out with Options.AllowUnconditional (unsafe).
//  2. CommitAfterRecovery (and any unconditional commit) first looks at the
//     key: a file restored from a checkpoint has often been committed already.
//  3. List the upload's parts and check them against the token
//     (recoverable.VerifyParts): a part that is missing, resized or overwritten
//     by a zombie attempt fails the commit with recoverable.ErrPartsChanged.
//  4. CompleteMultipartUpload with exactly those parts, each with its
//     CRC64NVME, the object's CRC64NVME (full-object type) and size where the
//     upload uses checksums, and If-None-Match: *.
//  5. Whatever the reply, look at the key. HEAD gives the size and the
//     full-object CRC64NVME; where a server keeps no full-object checksum,
//     the object is read back and its checksum computed, streaming. A reply
//     of 200 is never trusted alone: servers answer 200 without having made
//     the object.
//
// The outcomes:
//
//   - The key holds the token's bytes: success. Result.Created when a
//     completion of this call made it: the server acknowledged it and the
//     upload is gone afterwards (an acknowledgement while the upload stays
//     open means the server did nothing), or its reply was lost and the upload
//     then turned out completed. Result.AlreadyCommitted when the object was
//     there already, made by an earlier commit of the same token or by another
//     upload that wrote the same bytes; in that case our own upload is left
//     over and is aborted.
//   - The key holds other bytes (412, or found by the look): ErrKeyTaken. The
//     object is left intact; the token's upload is aborted.
//   - The upload is gone (NoSuchUpload) and so is the object, after a few
//     looks spaced out to let a concurrent completion of the same upload land:
//     ErrDataLost.
//   - 409 ConditionalRequestConflict: S3 discards the upload; ErrConflict, and
//     the caller writes the file again with a new upload (whose commit will
//     then meet the winner and compare).
//   - A 200 with nothing at the key is retried; if it persists, ErrUnconfirmed.
//
// Concurrent commits of different uploads to one key therefore leave one
// object: one caller gets Created, the others AlreadyCommitted (same bytes)
// or ErrKeyTaken (other bytes), and every loser's upload is aborted. A loser
// that wrote the same bytes counts as committed, because the file's identity
// is its content: the key holds exactly what its token describes.
//
// Every S3 call is retried, with exponential backoff and jitter bounded by
// the context, when it fails in a way worth retrying (see IsRetryable). That
// is safe because step 5 settles every ambiguity by looking at the key.
// Errors concerning one file are *recoverable.Error values that name the
// bucket, key and upload and carry a hint for the operator.
//
// After a successful commit the upload's side objects (the persisted tails
// under recoverable.SideObjectPrefix) are deleted. A failure there does not
// undo the commit; it is reported in Result.Warning, and the sweep removes
// the leftovers later.
//
// # Sweep and its cutoff
//
// Writers that crash, zombie attempts and abandoned checkpoints leave
// multipart uploads and side objects behind. Sweep aborts the uploads under
// the sink's prefix that were initiated before a cutoff and deletes the side
// objects under the staging prefix last modified before it; it never touches
// anything younger, and a dry run only counts. Ages are measured by the
// server's clock (the Date header of its replies), never the local one.
//
// The cutoff rule: OlderThan must exceed the longest time a file can stay
// open, from the creation of its upload until its commit token is committed,
// plus the longest time a checkpoint is retained and may be restored from. A
// checkpoint references its file's upload and its latest side object; a sweep
// with a shorter cutoff can destroy both while a restore still needs them, and
// the restore then fails with recoverable.ErrNoSuchUpload or
// recoverable.ErrSideObjectMissing. Bucket lifecycle rules that abort
// incomplete uploads (AbortIncompleteMultipartUpload) or expire staging
// objects are subject to the same rule; Sweep warns about rules that act
// sooner than its cutoff.
package committer
