// Package committer turns closed recoverable streams into objects, exactly once,
// and cleans up what writers leave behind.
//
// # Commit protocol
//
// A file is a multipart upload plus a commit token
// (recoverable.CommitToken) that names the upload and describes the file
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
//     A list emptied by a completion in flight elsewhere is looked into
//     first (the key, then the parts once more).
//  4. CompleteMultipartUpload with exactly those parts, each with its
//     CRC64NVME, the object's CRC64NVME (full-object type) and size where the
//     upload uses checksums, and If-None-Match: *; an empty file's
//     completion leaves the object's CRC64NVME out (MinIO refuses a zero).
//  5. Whatever the reply, look at the key. HEAD gives the size and the
//     full-object CRC64NVME, or the object is read back where the server
//     keeps none. A 200 is never trusted alone.
//
// The outcomes:
//
//   - The key holds the token's bytes: success. Result.Created when a
//     completion of this call made it, Result.AlreadyCommitted when the
//     object was there already (our upload, left over, is then aborted;
//     Result.UploadAborted reports only an upload this call saw open).
//   - The key holds other bytes (412, or found by the look): ErrKeyTaken. The
//     object is left intact; the token's upload is aborted.
//   - The upload is gone (NoSuchUpload) and nothing is at the key: see
//     "Settling" below; ErrDataLost only once the settle window has passed.
//   - 409, whatever its code: never a reason to abort the token's upload.
//     The commit looks at the key and otherwise starts the next round. An
//     upload discarded after a 409 ConditionalRequestConflict with nothing
//     settling at the key is ErrRewriteRequired (not ErrDataLost: a rerun
//     writes the same bytes); a 409 in every round is ErrConflict, the
//     upload intact for a later commit of the same token.
//   - A 200 with nothing at the key is retried; if it persists, ErrUnconfirmed.
//
// Concurrent commits of different uploads to one key therefore leave one
// object: one caller gets Created, the others AlreadyCommitted (same bytes)
// or ErrKeyTaken (other bytes), and every loser's upload is aborted. A loser
// that wrote the same bytes counts as committed, because the file's identity
// is its content: the key holds exactly what its token describes.
//
// # Settling
//
// One upload may be completed by several committers at once (the sink
// completes each file at bundle finalization and again in its commit
// stage), so "upload gone, key empty" is ambiguous while a completion may
// be in flight: the commit polls the key for Options.SettleTimeout (at
// least CompleteTimeout) before it reports ErrDataLost or
// ErrRewriteRequired; a wait past 30 seconds is logged to Options.Logger.
// docs/design.md, "The committer in depth", tells why.
//
// # Content identity
//
// "Already committed" means the key's object has the token's size and
// full-object CRC64NVME. CRC is affine, so where the bucket's ETags are
// MD5s (PreflightResult.ETagsAreMD5) and the object was cut into the
// token's part layout, the committer also compares the multipart ETag: a
// forgery caught so is ErrKeyTaken. docs/design.md, "The committer in
// depth", says when the check runs and what it leaves open.
//
// # Retries and time bounds
//
// Every S3 call is bounded by Options.CallTimeout (30 s) an attempt and
// retried up to Options.MaxAttempts (6) times when the module's one S3
// error table calls its failure transient; the protocol's own loops run at
// most Options.MaxRounds (6) rounds, the settle wait at most SettleTimeout,
// and clean-up, detached from the caller's context, at most CleanupTimeout
// (30 s). Retrying is safe because step 5 settles every ambiguity by
// looking at the key. The internal s3call package holds this policy and
// the worst case of every call; docs/design.md, "The committer in depth",
// counts them.
//
// # Errors and clean-up
//
// Errors concerning one file are *recoverable.Error values that name the
// bucket, key and upload and carry a hint for the operator.
//
// After a successful commit the upload's side objects (the persisted tails
// under recoverable.SideObjectPrefix) are deleted. A failure there does not
// undo the commit; it is reported in Result.Warning, and the sweep removes
// the leftovers later.
//
// Tokens are untrusted input for clean-up: the committer deletes only side
// objects of the token's upload under its own Options.StagingPrefix. A
// token naming another staging prefix still commits, its side objects are
// left alone, and Result.Warning wraps recoverable.ErrForeignStaging (a
// sweep with that prefix removes them).
//
// # Sweep and its cutoff
//
// Writers that crash, zombie attempts and abandoned checkpoints leave
// multipart uploads and side objects behind. Sweep aborts the uploads under
// the sink's prefix initiated before a cutoff and deletes the side objects
// under the staging prefix last modified before it, by the server's clock;
// a dry run only counts.
//
// The sweep removes only s3once's own left-overs (internal package
// ownkeys), refuses a staging prefix over the output prefix and, unless
// SweepOptions.Force, a cutoff younger than MinSweepAge; SweepReport.ClockSkew
// reports skews beyond ClockSkewNoise. docs/design.md, "The committer in
// depth", lists what counts as s3once's own.
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
//
// One exception to the cutoff: an upload of an s3once file name whose key
// holds an object is stale whatever its age, and so are its side objects,
// unless SweepOptions.KeepRestorable or Unconditional (or AllowUnconditional)
// is set; docs/design.md, "The committer in depth", tells why.
//
// # Versioned buckets
//
// With Options.Versioned, the clean-up after a commit and the sweep also
// remove the old versions and delete markers of s3once's own staging keys
// (never a current version, never another key); docs/design.md, "The
// committer in depth", tells why that is safe.
//
// # Where things are
//
// commit.go runs the protocol, lookup.go judges forged content, discard.go
// discards a refused run's uploads, cleanup.go and sweep.go remove side
// objects and left-overs. General bucket calls are internal/s3bucket's; S3
// errors, the retry policy and paginated listings internal/s3call's.
package committer
