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
//     Before that, the committer looks at the key and lists the parts once
//     more: a completion of the same token in flight elsewhere may empty the
//     list before its object shows (versitygw does), and is then found
//     committed.
//  4. CompleteMultipartUpload with exactly those parts, each with its
//     CRC64NVME, the object's CRC64NVME (full-object type) and size where the
//     upload uses checksums, and If-None-Match: *. An empty file's
//     completion leaves the object's CRC64NVME out: it is zero, carries
//     nothing the size does not, and MinIO refuses it (400
//     XAmzContentChecksumMismatch for its one zero-byte part). Nothing is
//     lost by that: step 5 checks the size and CRC64NVME at the key as for
//     any file.
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
//     over and is aborted. Result.UploadAborted reports only an upload this
//     call saw open: the abort's reply says nothing (MinIO answers 204 to
//     the abort of a completed upload, S3 404 NoSuchUpload), so where the
//     commit has not just listed the upload it checks first with one
//     ListParts of one part (on this already-committed path only), and does
//     not abort an upload found gone.
//   - The key holds other bytes (412, or found by the look): ErrKeyTaken. The
//     object is left intact; the token's upload is aborted.
//   - The upload is gone (NoSuchUpload) and nothing is at the key: see
//     "Settling" below; ErrDataLost only once the settle window has passed.
//   - 409, whatever its code: never a reason to abort the token's upload.
//     The commit looks at the key (an object there is judged as above), and
//     otherwise backs off and starts the next round: list the parts again
//     and complete again. OperationAborted and codes it does not know are
//     treated the same way, as transient. If the upload turns out discarded
//     after a 409 ConditionalRequestConflict (S3 may discard an upload whose
//     conditional completion met a conflicting write, and asks for a
//     rewrite) and nothing settles at the key, the error wraps
//     ErrRewriteRequired, which is not ErrDataLost: the file must be written
//     again under a new upload, and a rerun writes the same bytes. A 409 in
//     every round: ErrConflict, with the upload intact for a later commit of
//     the same token. The token's upload is aborted only where another
//     object already settled the key (ErrKeyTaken, AlreadyCommitted).
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
// One upload may be completed by several committers at once: the sink
// completes every file at bundle finalization and again in its commit stage,
// and duplicate bundles add more. A server may drop the upload before the
// object appears (versitygw does), so "upload gone, key empty" is ambiguous
// while any completion of that upload may still be in flight. The commit
// then polls the key, with backoff, for Options.SettleTimeout, which
// defaults to CompleteTimeout and may not be shorter: a completion that
// started before ours saw the upload gone has ended, for its caller, within
// CompleteTimeout. An object that shows in that window is judged as above;
// only after it does a genuine loss become ErrDataLost (or
// ErrRewriteRequired after a conditional conflict). The error says how long
// it waited and why, and a wait longer than 30 seconds is logged to
// Options.Logger while it lasts. The cost of a genuine loss is one
// SettleTimeout (15 minutes by default) per file; set a shorter
// CompleteTimeout and SettleTimeout where completions are known to be short.
//
// # Content identity
//
// "Already committed" means the key's object has the token's size and full
// object CRC64NVME. CRC is affine: anyone who can write to the bucket and
// predict a file can build other bytes with the same size and CRC, cheaply.
// Where a stronger check costs (nearly) nothing, the committer adds it: the
// preflight probe finds out once per bucket whether the server's ETags are
// MD5s of the bytes (PreflightResult.ETagsAreMD5; false under SSE-KMS or
// SSE-C), and where they are, and the token's parts have been listed from
// its upload (and checked against the token), and the object's ETag is a
// multipart ETag of the same part count, that ETag must equal the MD5 of the
// listed parts' MD5s. Equal ETags settle it. Unequal ones count as other
// bytes only when the object was cut into the same parts: HEAD with
// partNumber=1 (sent only in this case) gives the object's first part size,
// which for the uniform layouts the recoverable writer makes (every part
// but the last of one size) fixes the layout. A rerun with another PartSize
// therefore never becomes ErrKeyTaken. A forgery caught this way is
// ErrKeyTaken; the object is left intact and the token's upload aborted.
//
// What remains: the check does not run on buckets whose ETags are not MD5s,
// when the object is not a multipart object of the same part count (a
// forged object written with one PutObject, or cut otherwise, is still
// judged by size and CRC alone), when the token's upload is already gone
// and was never listed by this call, or when the Committer skipped its
// preflight (Options.SkipPreflight) and Preflight was not run on it. Against
// someone who can write to the output bucket, the defence remains access
// control; the ETag check raises the cost of a forgery made through the
// same multipart layout to an MD5 collision. Objects by other tools with the
// same bytes, the same part count and first part size but other sizes in
// the middle would be reported ErrKeyTaken (a false alarm, never a silent
// acceptance).
//
// # Retries and time bounds
//
// Every S3 call is bounded by Options.CallTimeout (30 s) an attempt and
// retried, up to Options.MaxAttempts (6) attempts with exponential backoff
// and jitter bounded by the context, when it fails in a way worth retrying
// (the module's one S3 error table decides): a worst case of 183 s a call
// with the defaults. The SDK client's retryer runs inside each attempt.
// Retrying is safe because step 5 settles every ambiguity by looking at the
// key. The protocol's own loops repeat protocol states only, at most
// Options.MaxRounds (6) times: a completion round (each
// CompleteMultipartUpload bounded by CompleteTimeout) after a 409, a 200
// with nothing at the key or a lost reply; a read-back that found the
// object changed. The settle wait is bounded by SettleTimeout. Clean-up runs
// detached from the caller's context, bounded by CleanupTimeout (30 s). The
// internal s3call package holds this policy and the table of every call's
// worst case.
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
// Tokens are untrusted input for clean-up. The committer deletes only under
// its own Options.StagingPrefix, in the token's upload folder, and only keys
// named as side objects are (internal package ownkeys). A token whose
// StagingPrefix is another folder still commits, but its side objects are
// left alone and Result.Warning wraps recoverable.ErrForeignStaging: the
// commit is what the caller asked for and is verified at the key, while the
// clean-up is a convenience that must never reach outside the configured
// folder. Tokens taken before an operator changed StagingPrefix are in that
// case: their side objects stay under the old prefix until a sweep with the
// old staging prefix (s3once sweep --staging-prefix OLD) removes them.
//
// # Sweep and its cutoff
//
// Writers that crash, zombie attempts and abandoned checkpoints leave
// multipart uploads and side objects behind. Sweep aborts the uploads under
// the sink's prefix that were initiated before a cutoff and deletes the side
// objects under the staging prefix last modified before it; it never touches
// anything younger but the left-overs at committed keys (see the cutoff rule
// below), and a dry run only counts. Ages are measured by the
// server's clock (the Date header of its replies), never the local one.
// Uploads are listed without a Prefix, from the folder's name on (KeyMarker),
// and filtered by key here: MinIO matches a listing's Prefix as a whole key
// and would list none of the uploads under a folder. The cost is at most one
// page (1,000 uploads on S3) of uploads past each folder.
//
// The sweep removes only s3once's own left-overs (internal package ownkeys):
// both prefixes are folders ("events" never holds "events-v2/"); it aborts
// only uploads whose keys are s3once file names or preflight probes, under
// the output prefix, and the preflight's uploads under the staging prefix
// (a program killed inside its preflight leaves one there); it deletes only
// side objects and probes under the staging prefix. Other tools' uploads and
// objects are counted as NotOwn and left alone. A staging prefix over the
// output prefix is refused by the rule the sink's configuration applies
// (ownkeys.CheckStagingApart: staging may lie under the output only below a
// segment starting with '.' or '_'), and so is a cutoff younger than
// MinSweepAge (an hour) unless SweepOptions.Force is set: such a cutoff is
// far more often a typo (7m for 7d) than a plan. SweepReport.ClockSkew
// compares the two clocks only beyond what the reading leaves open (the
// grain of the server's time, the round trip that read it: a slow call never
// shows as skew), and a skew under ClockSkewNoise is not worth a word.
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
// holds an object (a HEAD after the listing) is stale whatever its age, and
// so are its side objects. A commit with If-None-Match can never make it the
// key's object, so it serves nothing but a restore: a restore of a
// checkpoint that names it fails with recoverable.ErrNoSuchUpload once it is
// swept (the sink then writes the file again, counted in files_rewritten,
// and its commit finds the file committed), and a writer still writing it
// fails. SweepOptions.KeepRestorable leaves such uploads to the cutoff, and
// so does SweepOptions.Unconditional (or a Committer with
// AllowUnconditional), which a folder committed without If-None-Match
// needs: there such an upload can still replace the object, and nothing in
// the folder records that it was committed that way.
//
// # Versioned buckets
//
// On a bucket that keeps versions, a delete only hides an object behind a
// delete marker; its bytes stay as a noncurrent version. With
// Options.Versioned, the clean-up after a commit removes every old version
// and delete marker in the committed upload's side-object folder, and the
// sweep every old version and delete marker of s3once's own keys under the
// staging prefix (ownkeys.IsOwnStaging), whatever their age: such a key was
// deleted by a clean-up or a sweep, which delete only what no retained token
// references, and side-object keys are never written twice, so their old
// versions serve nothing. Current versions are never removed by this pass,
// nor any version of another key. Output files are never deleted, so the
// output prefix holds no old versions of s3once's. Under Object Lock with a
// default retention no version can be removed before it ends (see the sink
// package).
//
// # Where things are
//
// commit.go runs the commit protocol; lookup.go judges forged content;
// preflight.go probes a bucket's conditional writes; discard.go discards a
// refused run's uploads; cleanup.go deletes a commit's side objects;
// sweep.go removes what writers left; retry.go holds the committer's call
// policy. What a key holds (HEAD, read-back), listings, deletes in bulk and
// small objects read whole or written once are the internal s3bucket
// package's, which the sink and s3once verify share; reading S3 errors, the
// retry policy, paginated listings and the completion's request are the
// internal s3call package's.
package committer
