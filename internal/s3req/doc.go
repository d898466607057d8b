// Package s3req applies a bucket's request settings to every call an S3
// client makes, in one place: a middleware in the client's stack
// (Settings.Apply, added to s3.Options), not at each call site. Whatever
// package makes the call (the stream, the committer, the preflight, the
// sweep), the request carries:
//
//   - ExpectedBucketOwner, on every operation that takes it (all of those
//     s3once calls): S3 refuses with 403 a call to a bucket another account
//     owns, so a typo or a bucket name taken over elsewhere never receives
//     data or deletes.
//   - SSE-S3 or SSE-KMS (key ID, bucket key) on CreateMultipartUpload and
//     PutObject: the files, the side objects, the probes and the markers.
//   - SSE-C (the customer key, its algorithm and MD5) on every call that
//     writes or reads data: CreateMultipartUpload, UploadPart, ListParts,
//     CompleteMultipartUpload, PutObject, GetObject and HeadObject.
//   - The object settings of the output files (storage class, tags,
//     Cache-Control, Content-Disposition, user metadata) on
//     CreateMultipartUpload; the preflight's probe uploads carry them too,
//     so the permission to tag is checked.
//
// The middleware runs at the Initialize step, before the SDK validates and
// serialises the input: it fills in the typed input fields, so the SDK
// signs them and computes checksums as for any other field. It works on a
// copy of the input (the caller's struct is never written to) and never
// overrides a field the caller set.
//
// Secrets: an SSE-C key is held as its base64 and MD5 only, prints as
// "[redacted]", and is loaded on the machine that uses it (LoadCustomerKey:
// an environment variable or a file), never carried in a pipeline's graph.
//
// A rerun judges a file by its bytes (size and CRC64NVME): a file committed
// earlier with other object settings or another encryption counts as
// committed and keeps what it has.
package s3req
