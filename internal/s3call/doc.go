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
// An attempt's bound covers the SDK's own retries inside it. "Worst case" is
// every attempt timing out and every backoff at its longest (Policy.WorstCase).
// Throttling adds to any call under a Policy up to its ThrottleBudget (5 min)
// of SlowDown answers, on top of the figures below, before it fails: the
// lanes' waits (at most 5 s and a step's jitter each) fall inside an
// attempt's bound, the answers themselves are not attempts.
//
//	call                                   layer       attempt bound           attempts                  worst case
//	UploadPart, PutObject of a side object stream      30 s + 1 s/MiB (38 s)   3, timeouts only          114 s (8 MiB parts)
//	CreateMultipartUpload, GetObject tail  stream      same                    3, timeouts only          114 s
//	ListParts, each page (Recover)         stream      same                    3, timeouts only          114 s a page
//	AbortMultipartUpload at Dispose        stream      30 s, detached          1 (SDK retries inside)    30 s
//	HeadObject, ListParts page, Abort,     committer   30 s                    6, transient, 0.1-5 s     183.1 s
//	 DeleteObjects, listings' pages,                                           backoff
//	 probe PutObject/DeleteObject
//	CompleteMultipartUpload                committer   15 min (CompleteTimeout) 1 a round, 6 rounds     6 x 15 min + each round's listing and look at the key
//	settle wait (upload gone, key empty)   committer   SettleTimeout (15 min)  polls with backoff        15 min
//	read-back of an object (no HEAD CRC)   committer   the caller's context    6 restarts                the caller's context
//	clean-up after a commit or a failure   all         30 s in all, detached   per call as above         30 s
//	each preflight probe                   sink, via   30 s                    1 (SDK retries inside)    30 s
//	                                        s3call
//	the settings marker: GetObject (read   sink, via   30 s, read whole        6, transient, 0.1-5 s     183.1 s
//	 whole), PutObject If-None-Match, the   committer   within the attempt      backoff
//	 listing for files of an earlier
//	 release (each page)
//	barrier: ListObjectsV2 of each         sink, via   30 s                    6, transient, 0.1-5 s     183.1 s a page; HEADs
//	 partition (each page), HeadObject of   committer                          backoff                   16 at a time
//	 each file, its read-back where the
//	 server keeps no CRC (as above)
//	barrier's discard of a refused run:    sink, via   30 s, detached,         per call as above         30 s in all
//	 AbortMultipartUpload, side objects'    committer   CleanupTimeout in all
//	 listing and DeleteObjects
//	partition manifest and completion      sink, via   30 s, read whole        6, transient, 0.1-5 s     183.1 s
//	 marker: PutObject If-None-Match,       committer   within the attempt      backoff
//	 GetObject of one in place; the
//	 commit stage's GetObject of a
//	 partition's manifest
//	s3once verify: ListObjectsV2 and       verify      30 s                    3 (--max-attempts),       90.3 s a page or call
//	 ListMultipartUploads pages, HeadObject                                    transient, 0.1-5 s
//	 of each manifest entry, GetObject of                                      backoff
//	 the settings marker, a manifest, a
//	 completion marker (read whole within
//	 one attempt)
//	a manifest entry's look-up (verify)    verify      HEAD as above, then     3 read-backs              90.3 s + 3 x (30 s + 1 s/MiB
//	                                                   each read-back 30 s +                              + 5 s): 195.3 s for an
//	                                                   1 s/MiB                                            empty file, 219.3 s at 8 MiB
//	any call under a Policy, throttled     all         as above                SlowDown answers are      the row's worst case
//	                                                                           not attempts              + ThrottleBudget (5 min)
//	the Iceberg table stage's calls,       iceberg-go  30 s an attempt,        the sink's retryer (3     3 x 30 s + backoff;
//	 through iceberg-go's S3 file IO:      (package    request and answer      attempts, no quota);      a throttled call up to
//	 GetObject and HeadObject of table     iceberg-    body together           SlowDown through the      its ThrottleBudget;
//	 metadata, manifest lists and          table)      (Throttle.              shared backoff; a commit  each commit round
//	 manifests; PutObject (a multipart                 ApplyConfig)            that conflicts is made
//	 upload for a large one) of new ones                                       again by the stage's
//	 and of the run's commit marker;                                           loop, up to 20 rounds
//	 DeleteObject of what a failed commit
//	 wrote
//
// The stream's bound grows with PartSize (1 s per MiB); the committer's
// attempts and backoff follow committer.Options (MaxAttempts, BaseBackoff,
// MaxBackoff, CallTimeout, CompleteTimeout, SettleTimeout). s3once verify
// runs a committer with MaxAttempts 3 (--max-attempts) and bounds each
// file's look-up, read-back included, as in its row, since the committer
// bounds a read-back by its context alone. The Iceberg table stage's calls
// are iceberg-go's, outside the committer: no Policy wraps them, so the
// configuration the stage hands iceberg-go (sink.Config.AWSConfig, through
// Throttle.ApplyConfig) bounds each of their HTTP attempts at
// BaseCallTimeout and gives them the sink's retryer and shared backoff; a
// catalog's own calls (REST, Glue, SQL) are bounded by the caller's
// context alone.
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
