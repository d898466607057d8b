// Package s3call is the one home of what s3once knows about S3 as a service:
// what its errors mean, how a call is bounded and retried, how a listing is
// paged, and the small encodings every caller must agree on. The recoverable
// writer, the committer, the sink's preflight and the s3once CLI use it;
// none of them reads an S3 error string or pages a listing by hand.
//
// # Errors
//
// CodeOf maps a failed call to one Code (NotFound, NoSuchUpload,
// PreconditionFailed, Conflict, InvalidPart, AccessDenied, NotImplemented,
// Transient, Canceled, ...), from the server's error code first, then the
// HTTP status, then the transport error. The predicates (IsNotFound,
// IsNoSuchUpload, IsRetryable, ...) are built on it, so a server's quirk is
// one line in CodeOf's table. Every package of the module reads S3 errors
// through them; none exports a predicate of its own.
//
// # Which layer retries what
//
// Four layers may repeat a call; each retries only what the one below cannot
// see:
//
//  1. The SDK client's retryer retries, inside each attempt, what it
//     recognises: connection failures, 5xx, and throttling of calls made
//     outside a Policy (Config.MaxAttempts in the sink, the AWS default of
//     3 elsewhere). It has no retry quota (see Throttling).
//  2. A Policy (Do) bounds each attempt with CallTimeout, which the SDK
//     cannot do for a connection that stalls without an error, and makes an
//     attempt that got no answer again. The recoverable stream stops there
//     (RetryTimeouts): a part upload the SDK gave up on breaks the stream,
//     and recovery from the last token is the answer. The committer's policy
//     (RetryTransient) also retries the failures IsRetryable reports, with
//     backoff, so an outage longer than the SDK's budget costs a wait: its
//     protocol checks the key after every call whose outcome is unknown.
//  3. The committer's protocol loops repeat protocol states only: a
//     completion round after a 409, after a 200 with nothing at the key,
//     after a completion whose reply was lost; the settle wait polls the key;
//     a read-back restarts when the object changed under it.
//  4. The sink's commit stage calls the committer again (three times in
//     all) after a failure IsRetryable reports or ErrConflict; then the
//     runner retries the bundle.
//
// # Throttling
//
// S3 answers 503 SlowDown when a prefix takes more requests than its
// partition allows, and while it re-partitions, which lasts minutes. Every
// client NewClient builds carries a Throttle: a backoff per lane (a bucket
// and the folder of the key) that all the client's calls share, and a
// budget per call (DefaultThrottleBudget, 5 minutes; sink.Config's
// ThrottleBudget). A SlowDown answer holds every request of its lane back
// for a wait that doubles with each further answer, from 200 ms up to 5 s,
// jittered, and halves with each success. Under a Policy a SlowDown answer
// is not an attempt: Do sends the call again after the lane's wait, and
// only once the call has been answered SlowDown for its budget does it
// fail, with a *ThrottledError (ErrThrottled, [s3once:throttled]) that no
// layer above retries. The preflight's probes are single attempts under a
// Policy too (Probes): a refusal fails at once, a throttled probe
// waits within its budget and its caller's bound. A call outside any Policy (a program of its own
// over a client NewClient built) keeps the SDK's own retries of throttling
// answers, with the lane's wait before each attempt.
//
// The SDK's standard retryer keeps a retry quota per client by default: a
// token bucket of 500, a retry costing 14 tokens and a throttled retry 5.
// A storm on a busy worker empties it within seconds, and from then on
// every call of the client fails at its first error, whatever its budget
// (Flink's S3 writer gave up during checkpoints this way). NewClient's
// retryer therefore has no quota (ratelimit.None): attempts and Policies
// bound retries, and the budget bounds throttling.
//
// Clean-up after a failure or after the outcome is known (aborting an
// unpersisted upload, deleting side objects and probes) runs on Detached:
// the caller's values without its cancellation, for DefaultCleanupTimeout
// (30 s) in all.
//
// # Worst-case latency, with the defaults
//
// An attempt's bound covers the SDK's own retries inside it; the worst
// case is every attempt timing out and every backoff at its longest
// (Policy.WorstCase), and throttling adds up to a call's ThrottleBudget
// (5 min) of SlowDown answers. docs/design.md, "Worst case of each S3
// call", tabulates every call the module makes with the defaults.
//
// # Listings
//
// ListParts, ListObjects and ListUploads page through the SDK's paginators,
// each page one call under a Policy. The sweep lists uploads without a
// Prefix, from a KeyMarker on, because MinIO matches a listing's Prefix as a
// whole key; ListUploads keeps the marker it is given and ends a listing
// whose truncated page names no marker to go on from.
//
// # Encodings
//
// EncodeCRC and DecodeCRC are the CRC64NVME header codec. CompleteInput
// builds every CompleteMultipartUpload s3once sends (the committer's and the
// preflight's). StagingPrefix applies the default staging folder. Keys are
// named by the internal ownkeys package, the one place that joins them.
//
// # Clients
//
// NewClient builds the *s3.Client that the sink and the CLI use, from the
// standard AWS configuration chain and a few settings.
package s3call
