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
// A ResumeRecoverable names the bucket, key and upload, the part size, the
// persist sequence number, a PartList and the Tail. The PartList does not list
// the parts: it holds their count, their total size, a SHA-256 chained over
// every part's (number, size, ETag), and the CRC64NVME of their bytes. Recover
// and commit list the upload's parts and recompute the chain over parts
// 1..Count, so a part that is missing, resized or rewritten with other bytes is
// caught; parts numbered higher (written after the token, or by a zombie
// attempt) are ignored and later overwritten. The token is therefore the same
// size at one part and at 10,000 (a few hundred bytes once encoded, see the
// coder package), where a list of ETags would grow by tens of bytes a part.
//
// The tail rides in the token when it is at most Options.InlineTailMax bytes;
// otherwise Persist writes it to a side object at
// <staging prefix><upload ID>/<persist seq>-<nonce>. Every side object of an
// upload shares the prefix SideObjectPrefix(staging, upload), so a commit or a
// sweep removes them all by listing it. The nonce is per stream incarnation, so
// a zombie attempt that reaches the same sequence number cannot overwrite the
// tail another attempt's token points at.
//
// # Content identity
//
// Every part's CRC64NVME is computed once, by the goroutine that uploads it; it
// is sent with the part (the server checks it) and folded into the file's
// running checksum with CRC64Combine. A token therefore carries the CRC of all
// the bytes it describes, across any number of recoveries, and the committer
// sends it with CompleteMultipartUpload (a FULL_OBJECT checksum), so the server
// itself refuses to assemble a file whose bytes differ from what was written.
//
// # Guarantees
//
//   - A token describes exactly the parts 1..Count followed by the tail; after
//     Recover the position is their total length and the next byte lands right
//     after them. Bytes written after the token was taken never reappear.
//   - Nothing a token references is destroyed by Recover, Persist, Dispose or a
//     failure: only Cleanup (a side object), the committer and the sweep
//     destroy. Dispose aborts an upload only when no token can name it.
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
//     the server is slow, Write blocks instead of buffering more.
//
// # Retries
//
// The stream does not retry on its own: the S3 client's retryer retries each
// call (its default does, with backoff). When a call still fails, the stream
// reports it: a failed part upload breaks the stream (recover from the last
// token); a failed side-object upload fails that Persist only.
package recoverable
