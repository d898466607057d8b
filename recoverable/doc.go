// Package recoverable writes one file as an S3 multipart upload that survives
// crashes: a Stream can be persisted at any moment into a small token, and a
// Writer turns that token back into a stream positioned exactly where the token
// was taken, the bytes past the last part boundary (the tail) included.
//
// # A file's life
//
//	w, _ := recoverable.NewWriter(client, recoverable.Options{})
//	s, _ := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
//	s.Write(p)                    // full parts upload in the background
//	rr, _ := s.Persist(ctx)       // durable: keep rr in the checkpoint
//	...crash...
//	s, _ = w.Recover(ctx, rr)     // parts checked, tail fetched and checked
//	s.Write(more)
//	cr, _ := s.CloseForCommit(ctx) // the tail becomes the last part
//	// hand cr to the committer package, which completes the upload
//
// Nothing is visible at the key until the commit token is committed.
//
// # What a token holds, and why it stays small
//
// A ResumeToken names the bucket, key and upload, the part size, the
// persist sequence number, a PartList and the Tail. The PartList does not list
// the parts: it holds their count, their total size, the CRC64NVME of their
// bytes, and a SHA-256 chained over every part's (number, size, ETag). Recover
// and commit list the upload's parts and check parts 1..Count against it (see
// below), so a part that is missing, resized or rewritten with other bytes is
// caught; parts numbered higher (written after the token, or by a zombie
// attempt) are ignored and later overwritten. The token is therefore the same
// size at one part and at 10,000 (a few hundred bytes once encoded, see the
// coder package), where a list of ETags would grow by tens of bytes a part.
//
// The tail rides in the token when it is at most Options.InlineTailMax bytes;
// otherwise Persist writes it to a side object at
// <staging prefix><upload ID>/<persist seq>-<nonce>. Every side object of an
// upload shares the prefix SideObjectPrefix(staging, upload), so a commit or a
// sweep removes them all by listing it. No two PUTs of side objects share a
// key: every Persist attempt takes the next sequence number, a failed one too
// (its PUT may still land after the reply was lost, and must then land on a
// key no token names), and the nonce is per stream incarnation, so a zombie
// attempt that reaches the same sequence number cannot overwrite the tail
// another attempt's token points at. Tokens' sequence numbers increase, with
// gaps where a Persist failed.
//
// # Parts are known by their bytes, not their ETags
//
// An ETag names one upload of a part, not its content, wherever the bucket
// encrypts with SSE-KMS (many AWS buckets do by default): uploading the same
// bytes again as the same part number gives it a new ETag. That happens in
// normal operation: an attempt restored from an older checkpoint replays the
// same records and uploads the same parts again, and an UploadPart abandoned
// after its call timeout may land after its retry did. So where the server
// lists each part's CRC64NVME (every upload the stream opens asks for them,
// unless Options.DisableChecksums), Recover and commit identify parts
// 1..Count by number, size and checksum: the listed parts must hold the
// token's byte count, and their checksums, chained in part order with
// CRC64Combine, must give the token's CRC. The chain changes whenever any one
// part's checksum does (appending bytes is an invertible map on CRCs), so one
// altered part is caught as surely as by comparing its own checksum. The
// completion then names the ETags just listed, whichever upload made them.
//
// Why the token needs no per-part checksums for this, and what the rule
// gives up against deliberate forgery, is in docs/design.md, "Parts known
// by their bytes".
//
// The combination to avoid: Options.DisableChecksums on a bucket whose ETags
// are not MD5s (SSE-KMS, SSE-C). With no part checksums to compare, a part
// uploaded again with the same bytes cannot be told from one overwritten with
// other bytes; Recover and commit then refuse the token with ErrPartsChanged.
// That is loud, never a wrong file, but it turns a routine re-upload into a
// rewrite of the file from the source. The committer's preflight tells
// whether a bucket's ETags are MD5s (committer.PreflightResult.ETagsAreMD5),
// so a preflight can refuse the combination; the Writer itself cannot see
// the bucket's encryption.
//
// # Content identity
//
// Every part's CRC64NVME is computed once, by Write, sent with the part and
// folded into the file's running checksum (CRC64Combine): a token carries
// the CRC of all the bytes it describes, and the server itself refuses to
// assemble a file whose bytes differ (docs/design.md, "Parts known by
// their bytes").
//
// # Guarantees
//
//   - A token describes exactly the parts 1..Count followed by the tail; after
//     Recover the position is their total length and the next byte lands right
//     after them. Bytes written after the token was taken never reappear.
//   - Nothing a token references is destroyed by Recover, Persist, Dispose or a
//     failure: only Cleanup (a side object), the committer and the sweep
//     destroy. Dispose aborts an upload only when no token can name it.
//     A process killed between Open and its first Persist leaves an upload
//     that no token names: the committer's sweep aborts it when its key is
//     one of the sink's file names (package ownkeys), never under a key of
//     the caller's own choosing, which only the caller can recognise. Give
//     such keys a lifecycle rule (AbortIncompleteMultipartUpload).
//   - A missing or altered artifact gives a typed error (*Error wrapping
//     ErrNoSuchUpload, ErrPartsChanged, ErrSideObjectMissing or ErrTailCorrupt)
//     that names the bucket, key and upload; never a shorter, longer or
//     different file. Recover keeps the tail in memory: it leaves no temporary
//     files behind.
//   - Parts are numbered 1..n without gaps and every part but the last holds
//     exactly PartSize bytes. A file never needs part MaxParts+1: the Write that
//     would need it returns ErrPartLimit, and the stream can still be persisted
//     and closed. Roll files before PartSize x MaxParts bytes.
//   - An empty file (nothing written) becomes a zero-byte object: one empty
//     part, which S3 accepts as the only part of an upload.
//   - A stream holds at most PartSize x (Concurrency+1) bytes of buffers; when
//     the server is slow, Write blocks instead of buffering more. The buffers
//     are pooled per Writer: a finished stream's buffers serve the next
//     stream, and the pool keeps at most Concurrency+1 idle ones, so a Writer
//     that has one stream open at a time holds PartSize x (Concurrency+1) in
//     all, however many files it writes. A buffer goes back to the pool only
//     when no request body over it can be read any more (every read of a body
//     holds its lock; the stream retires the bodies once a call has returned
//     for good, and a buffer whose body is still being read, by a transport
//     writing an abandoned attempt, is left to the collector instead).
//
// # Retries
//
// A call the stream makes is retried in two layers, and only there. The S3
// client's retryer retries, inside each attempt, what it recognises
// (connection failures, 5xx, throttling; the AWS default is 3 tries). The
// stream adds the one case a retryer cannot see: an attempt that gets no
// answer at all (a stalled connection) is abandoned after
// Options.CallTimeout and made again, three attempts in all, then the call
// fails with ErrCallTimeout. The worst case of one call is therefore three
// times CallTimeout (114 s for 8 MiB parts); the internal s3call package's
// docs hold the table for every call s3once makes. An abandoned attempt may
// still reach the server later; every call made again this way writes the
// same bytes to the same part number or key, which the part identity above
// and the fresh side-object key per Persist make harmless. When a call still
// fails, the stream reports it: a failed part upload breaks the stream
// (recover from the last token); a failed side-object upload fails that
// Persist only, and the stream can persist again. Recover lists the parts
// page by page, each page under the same bound.
//
// # Where things are
//
// writer.go opens and recovers streams and cleans up side objects;
// stream.go writes, persists and closes one; token.go holds the tokens and
// PartList; validate.go checks a token before it is trusted; verify.go
// checks an upload's parts against a token (VerifyParts); crc.go computes
// and combines CRC64NVME checksums and renders them for headers; nonce.go
// names a stream's incarnation. How S3 errors are read, how calls are
// bounded and retried, and how listings are paged live in the internal
// s3call package, which the committer shares.
package recoverable
