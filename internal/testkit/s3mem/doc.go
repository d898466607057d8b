// Package s3mem is a deterministic, in-memory S3 server for tests.
//
// # Design
//
// The Fake sits under a real *s3.Client, as its http.RoundTripper
// (Fake.NewClient): the SDK builds, signs, checksums and retries each request
// as it would against S3, and parses the Fake's XML and headers with its own
// deserializers. So the errors the code under test sees are the SDK's own
// types (smithy.APIError, *smithyhttp.ResponseError, ...), the SDK's retryer
// and its checksum validation run, and the Date header reaches the code that
// reads the server's clock. Clients use path-style addressing on the fixed
// endpoint http://s3mem.invalid; no socket is opened, no goroutine is started
// and no timer is armed inside the Fake, so it runs inside a testing/synctest
// bubble, where the SDK's backoff and the callers' timeouts use fake time.
//
// A Fake is a value created per test (New), with buckets (CreateBucket,
// Bucket), a call log (Calls), fault rules (Inject) and an optional Gate.
// Stored reads an object's bytes where the Fake holds them, without a
// request, for checks after a run. The one package-level state is a pool
// of body buffers: a test that is done with a Fake may Release it, and the
// next Fakes of the process read their large request bodies into its
// buffers instead of fresh memory (under the race detector, fresh memory
// costs far more than the copy into it). Without Release a Fake allocates
// as it always did.
//
// An object keeps its bytes as the pieces that were written: the body of a
// PutObject, or a completed upload's parts, shared with them, never copied
// into one buffer; GETs, ranges and full-object checksums run over the
// pieces.
//
// Each client has an identity (ClientOptions.Name). A crash (Fake.Crash, or
// a crash fault) is as final as SIGKILL for that identity: every later
// request from it fails at once, unapplied, with an error wrapping
// ErrCrashed that the SDK does not retry. Goroutines of a crashed writer
// (part uploads, detached clean-ups) go on running in the test process; they
// reach nothing. A request the server already holds (blocked in Gate) when
// its client crashes is still applied, as a request already on the wire
// would be; its reply is lost.
//
// Operations (Op) are named once for the project, in internal/testkit/s3fault
// (s3fault.Ops: the calls s3once makes, which the fault wrapper wraps and
// the Fake serves); the Fake adds only the bucket calls tests make
// (CreateBucket, HeadBucket) and Unsupported for anything else. Fault rules,
// the call log and the Gate use those names.
//
// Every request goes through: the dead-client check; the fault rules, first
// match wins (by operation, client, key, part number, the SDK's attempt
// number from its amz-sdk-request header, how many matches to skip and how
// often to fire); the Gate, if any, outside the lock, where a scheduler may
// hold it until it chooses to release it, and may decide its fate (any
// fault Kind) as it does; then the operation, applied atomically under the
// Fake's lock.
//
// Faults (Kind): CrashBeforeSend (server sees nothing), CrashAfterApply
// (applied, reply lost, client dead), InternalError (500) and SlowDown (503),
// unapplied, retried by the SDK where it has attempts left; Conflict (409
// ConditionalRequestConflict, unapplied); Hang (never answered nor applied,
// returns the context's error when the request's context is done) and
// HangAfterApply (applied, then no answer); Late (answered 500, unapplied,
// then applied right after the same client's next applied PutObject: a
// request that stalled in the server and lands behind a newer one);
// CrashLagged (CrashAfterApply, and a completion's object shows only
// Options.VisibleLag after its upload went, as servers drop an upload
// before its object shows).
//
// # Semantics
//
// The operations s3once calls, with S3's rules:
//
//   - CreateMultipartUpload, with x-amz-checksum-algorithm and
//     x-amz-checksum-type (CRC64NVME is FULL_OBJECT; CRC32, CRC32C, SHA1 and
//     SHA256 default to COMPOSITE). Upload IDs are s3mem-upload-N.
//   - UploadPart: part numbers 1..MaxParts (10,000), Content-MD5 and every
//     x-amz-checksum-* header checked against the bytes (BadDigest), a hex
//     x-amz-content-sha256 too; a checksum of another algorithm than the
//     upload's is refused (InvalidRequest); a part without the upload's
//     checksum gets one computed. A part re-uploaded replaces the old one.
//   - ListParts, ListMultipartUploads (by key, then initiation order, with
//     key and upload-ID markers) and ListObjectsV2 (prefix, delimiter,
//     start-after, continuation token) page at min(max-*, Options.PageSize).
//     Parts list their checksums; uploads list their algorithm and type.
//   - CompleteMultipartUpload: NoSuchUpload for an upload aborted or already
//     completed (or of another key); MalformedXML for an empty part list;
//     InvalidPartOrder unless part numbers ascend; InvalidPart for a part
//     missing, or whose ETag or listed checksum differs; EntityTooSmall for a
//     non-last part under MinPartSize (5 MiB); x-amz-mp-object-size checked;
//     the full-object checksum header checked against the assembled bytes
//     (BadDigest); then If-None-Match: * (412 if the key exists) and If-Match.
//     The object's ETag is S3's MD5-of-MD5s with the part count; its checksum
//     the full-object CRC64NVME (or the composite one of a COMPOSITE upload).
//   - PutObject: digests checked as for parts; If-None-Match: * and If-Match
//     (412); without a checksum header the object gets a CRC64NVME, as S3
//     gives every new object one.
//   - A conditional PutObject or CompleteMultipartUpload applied while
//     another write of the same key is between its arrival and its
//     application (held by the Gate) gets 409 ConditionalRequestConflict
//     (counted by Conflicts). Without a Gate no two writes overlap, so a 409
//     comes only from a Conflict fault.
//   - GetObject and HeadObject: NoSuchKey (HEAD: a bare 404); Range (206,
//     416 InvalidRange); partNumber (the part's bytes and
//     x-amz-mp-parts-count); If-Match (412) and If-None-Match (304); with
//     x-amz-checksum-mode ENABLED and the whole object asked for, its
//     checksum and x-amz-checksum-type.
//   - DeleteObject (204, also for a missing key); DeleteObjects (needs
//     Content-MD5 or a checksum header, at most 1000 keys, Quiet).
//   - GetBucketLifecycleConfiguration: 404 NoSuchLifecycleConfiguration, or
//     501 NotImplemented with Options.LifecycleNotImplemented.
//   - HeadBucket, CreateBucket; anything else is 501 NotImplemented. Every
//     operation on a missing bucket is 404 NoSuchBucket.
//   - ETags are quoted MD5s, or with Options.RandomETags deterministic values
//     that are not digests of the bytes (as under SSE-KMS or SSE-C).
//   - Every reply carries a Date header from the server's clock (time.Now,
//     Options.Now, or stopped by SetClock and moved by Advance); times are
//     kept to the second, as the Date header has them.
//   - Signatures are not checked: any credentials are accepted.
//
// # Known differences
//
// TestSemantics runs the same checks against the Fake and versitygw, the
// stream conformance suite (recoverable, TestConformanceMem) and the
// committer's protocol tests (committer, TestOnFake) run against both. Where
// the Fake and a real server disagree, either the Fake has a bug or the
// server has a quirk; the quirks and simplifications found so far:
//
//   - versitygw v1.8.0 answers 200 to a second CompleteMultipartUpload of an
//     upload it already completed (S3 may as well, for a while); the Fake
//     answers NoSuchUpload, the harder case for the committer.
//   - versitygw v1.8.0 refuses, with 400 InvalidArgument "Invalid uploadId
//     marker", the NextUploadIdMarker it handed out when ListMultipartUploads
//     is paged with a prefix: a sweep of more than one page of uploads fails
//     there. The Fake pages as S3 does.
//   - versitygw v1.8.0 checks part sizes before part order, so a completion
//     both out of order and with a small part is EntityTooSmall there.
//   - Checksums omitted from a CompleteMultipartUpload's part list are
//     accepted (S3 demands them for COMPOSITE uploads).
//   - Of two conditional writes of one key in flight at once, the Fake fails
//     the one applied first with 409 and lets the other proceed (and meet
//     412 if the first created the object); S3 leaves the order open.
//   - Delimiters in ListMultipartUploads, versioning, SSE headers,
//     If-Modified-Since and aws-chunked bodies are not modelled; the SDK
//     sends no aws-chunked body over plain http.
package s3mem
