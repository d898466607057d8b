package committer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// Result describes a successful commit: the object at the key is the one the
// token describes (its size and full-object CRC64NVME were checked). Exactly
// one of Created and AlreadyCommitted is true.
type Result struct {
	Bucket, Key, UploadID string
	// Size and CRC are the committed object's size and CRC64NVME.
	Size int64
	CRC  uint64
	// ETag is the object's ETag as the server reports it.
	ETag string
	// Created: a completion sent by this call made the object. It is true
	// when the server acknowledged the completion, the object checked out and
	// the upload was gone afterwards, or when a completion's reply was lost
	// and the upload then turned out to be completed into the right object.
	Created bool
	// AlreadyCommitted: the object was already there with the same bytes,
	// made by an earlier commit of this token or by another upload that wrote
	// the same bytes (a duplicate attempt). Nothing was written.
	AlreadyCommitted bool
	// UploadAborted: the token's upload was left over (another upload had
	// already put the same bytes at the key), was seen open by this call
	// and was aborted. An upload that was already completed or gone is not
	// reported, whatever the server answers to its abort (MinIO answers an
	// abort of a completed upload with 204, as if it aborted something).
	UploadAborted bool
	// ReadBack: the server keeps no full-object checksum, so the object was
	// read back to compute it.
	ReadBack bool
	// SideObjectsDeleted counts the upload's side objects removed afterwards.
	SideObjectsDeleted int
	// Warning is a clean-up failure after the commit succeeded (side objects
	// or a left-over upload could not be deleted; the sweep will). It is not a
	// commit failure.
	Warning error
}

// Commit completes the token's multipart upload into its key and proves that
// the key then holds the token's bytes. It is meant for the attempt that just
// closed the stream; CommitAfterRecovery is for a token restored from a
// checkpoint. Both are idempotent and give the same answers; they differ only
// in what they try first.
//
// The completion lists exactly the token's parts (checked with ListParts
// against the token's digest), carries the parts' and the object's CRC64NVME
// and the object's size where the upload uses checksums, and is conditional
// (If-None-Match: *). Its outcome is always checked at the key:
//
//   - the key holds the token's size and CRC64NVME: success (Created, or
//     AlreadyCommitted when another attempt got there first; a left-over
//     upload of ours is then aborted);
//   - the key holds other bytes: an error wrapping ErrKeyTaken; that object
//     is left intact and the token's upload is aborted;
//   - the upload is gone and the key stays empty for Options.SettleTimeout
//     (another completion of the same upload may be landing): an error
//     wrapping ErrDataLost, or ErrRewriteRequired when a 409
//     ConditionalRequestConflict came first (the server discarded the upload;
//     the file must be written again);
//   - a 409 never aborts the token's upload: the key is looked at and the
//     completion tried again; a 409 in every round is an error wrapping
//     ErrConflict, with the upload left intact;
//   - the upload's parts differ from the token: recoverable.ErrPartsChanged.
//
// Failures worth retrying are retried with backoff while ctx lasts. Errors
// are *recoverable.Error values naming the bucket, key and upload. After a
// success the upload's side objects are deleted; a failure there is reported
// in Result.Warning only.
func (c *Committer) Commit(ctx context.Context, cr recoverable.CommitToken) (Result, error) {
	return c.commit(ctx, "commit", cr, false)
}

// CommitAfterRecovery is Commit for a token restored from a checkpoint, when
// the file may well have been committed already (by the attempt that wrote the
// checkpoint, or by a duplicate). It looks at the key first and completes the
// upload only when the key is empty. Its outcomes are Commit's.
func (c *Committer) CommitAfterRecovery(ctx context.Context, cr recoverable.CommitToken) (Result, error) {
	return c.commit(ctx, "commit after recovery", cr, true)
}

func (c *Committer) commit(ctx context.Context, op string, cr recoverable.CommitToken, lookFirst bool) (Result, error) {
	res := Result{Bucket: cr.Bucket, Key: cr.Key, UploadID: cr.UploadID, Size: cr.Size(), CRC: cr.CRC()}
	if err := validate(cr); err != nil {
		return res, fail(op, cr, err, "")
	}
	if err := c.ensurePreflight(ctx, cr.Bucket, c.opts.StagingPrefix); err != nil {
		return res, fail(op, cr, err, "")
	}
	if (lookFirst && !mutBlindCommit()) || c.opts.AllowUnconditional {
		f, err := c.lookup(ctx, cr)
		if err != nil {
			return res, fail(op, cr, err, "")
		}
		if f.Exists {
			var parts []recoverable.Part
			state := uploadUnknown
			if f.Is(cr.Size(), cr.CRC()) && c.etagsAreMD5(cr.Bucket) {
				// The upload is about to be discarded as left over: list
				// its parts first, for the ETag check. An upload already
				// gone or changed leaves the check to size and CRC.
				var err error
				parts, _, err = c.verifyParts(ctx, cr)
				switch {
				case err == nil:
					state = uploadOpen
				case errors.Is(err, recoverable.ErrNoSuchUpload):
					state = uploadGone
				}
			}
			return c.settle(ctx, op, cr, res, f, false, parts, state)
		}
	}

	// ambiguous: a completion of ours may have been applied although we did
	// not see the reply. conflicted: the server answered a completion with
	// 409 ConditionalRequestConflict, after which it may discard the upload.
	ambiguous, conflicted := false, false
	// partsRelisted: the parts were found changed once, and listed again.
	partsRelisted := false
	var parts []recoverable.Part
	var last error
	for round := 1; round <= c.opts.MaxRounds; round++ {
		if round > 1 {
			if err := c.sleep(ctx, round-1); err != nil {
				return res, fail(op, cr, fmt.Errorf("%w (last failure: %w)", err, last), "")
			}
		}
		listed, useCRC, err := c.verifyParts(ctx, cr)
		if err != nil {
			if errors.Is(err, recoverable.ErrNoSuchUpload) {
				return c.uploadGone(ctx, op, cr, res, ambiguous, conflicted, parts)
			}
			if errors.Is(err, recoverable.ErrPartsChanged) && !partsRelisted {
				// A completion of the same token in flight elsewhere (the
				// finalization callback and the commit stage at once) can
				// empty the part list before the object shows (versitygw
				// moves the parts away first). Look at the key, and list
				// once more before calling the parts changed.
				f, lerr := c.lookup(ctx, cr)
				if lerr == nil && f.Exists && f.Is(cr.Size(), cr.CRC()) {
					return c.settle(ctx, op, cr, res, f, false, parts, uploadUnknown)
				}
				partsRelisted = true
				last = err
				continue
			}
			return res, fail(op, cr, err, "")
		}
		parts = listed
		_, err = within(ctx, c.opts.CompleteTimeout, func(ctx context.Context) (*s3.CompleteMultipartUploadOutput, error) {
			return c.client.CompleteMultipartUpload(ctx, c.completeInput(cr, parts, useCRC))
		})
		switch {
		case err == nil:
			// Servers answer 200 without having made the object: look.
			f, lerr := c.lookup(ctx, cr)
			if lerr != nil {
				return res, fail(op, cr, fmt.Errorf("confirm completion: %w", lerr), hintUnverified)
			}
			if f.Exists {
				return c.settle(ctx, op, cr, res, f, true, parts, uploadUnknown)
			}
			ambiguous = true
			last = ErrUnconfirmed
		case s3call.IsPreconditionFailed(err):
			f, lerr := c.lookup(ctx, cr)
			if lerr != nil {
				return res, fail(op, cr, lerr, "")
			}
			if f.Exists {
				// The upload was listed just before, so this completion was
				// refused: whatever is at the key came from elsewhere, and
				// the upload is still open.
				return c.settle(ctx, op, cr, res, f, false, parts, uploadOpen)
			}
			// The object went away between the two calls; try again.
			last = err
		case s3call.IsNoSuchUpload(err):
			return c.uploadGone(ctx, op, cr, res, ambiguous, conflicted, parts)
		case s3call.IsConflict(err):
			// A 409 never costs the token its upload. Whatever its code
			// (a conflicting write, OperationAborted, ...), look at the key;
			// if nothing settled there, the next round lists the parts
			// again and completes again, or finds the upload discarded.
			// S3 may discard the upload after this one 409 (the other,
			// OperationAborted, says only "try again").
			if s3call.APICode(err) == "ConditionalRequestConflict" {
				conflicted = true
				if mutAbortOn409() {
					_, _ = c.abortUpload(ctx, cr)
				}
			}
			f, lerr := c.lookup(ctx, cr)
			if lerr == nil && f.Exists {
				// The server may have discarded the upload after the 409.
				return c.settle(ctx, op, cr, res, f, false, parts, uploadUnknown)
			}
			last = fmt.Errorf("%w: %w", ErrConflict, err)
		case s3call.IsRetryable(err) && ctx.Err() == nil:
			ambiguous = true
			last = err
		default:
			if s3call.CodeOf(err) == s3call.InvalidPart {
				return res, fail(op, cr, fmt.Errorf("%w: complete multipart upload: %w", recoverable.ErrPartsChanged, err), hintMismatch)
			}
			return res, fail(op, cr, fmt.Errorf("complete multipart upload: %w", err), "")
		}
	}
	switch {
	case errors.Is(last, ErrUnconfirmed):
		return res, fail(op, cr, fmt.Errorf("%w after %d completions", ErrUnconfirmed, c.opts.MaxRounds), hintUnconfirm)
	case errors.Is(last, ErrConflict):
		return res, fail(op, cr, fmt.Errorf("complete multipart upload: 409 in each of %d rounds, the upload left intact: %w", c.opts.MaxRounds, last), hintConflict)
	}
	return res, fail(op, cr, fmt.Errorf("complete multipart upload: giving up after %d rounds: %w", c.opts.MaxRounds, last), "")
}

// uploadState is what a commit knows about the token's upload when it
// settles: whether the upload was seen open or gone just before, or not
// looked at.
type uploadState int

const (
	uploadUnknown uploadState = iota
	uploadOpen
	uploadGone
)

// settle decides on an object found at the key. mine says a completion of
// this call was acknowledged. parts are the token's parts as last listed, if
// any (for the ETag check). state is what is known of the upload.
func (c *Committer) settle(ctx context.Context, op string, cr recoverable.CommitToken, res Result, f found, mine bool, parts []recoverable.Part, state uploadState) (Result, error) {
	if !f.Is(cr.Size(), cr.CRC()) {
		_, aerr := c.abortUpload(ctx, cr)
		err := fmt.Errorf("%w: the key holds %s; the token describes %s", ErrKeyTaken, f, describe(cr.Size(), cr.CRC()))
		return res, fail(op, cr, joinCleanup(err, aerr), hintKeyTaken)
	}
	var warns []error
	if mine {
		// Servers acknowledge completions they did not carry out when an
		// object is already at the key; then our upload is still open.
		open, err := c.isUploadOpen(ctx, cr)
		if err != nil {
			warns = append(warns, fmt.Errorf("check that the upload is gone: %w", err))
		}
		mine = !open
		if open {
			state = uploadOpen
		}
	}
	if !mine {
		// Another upload's object is about to be taken for ours, and ours
		// discarded: a second opinion where one comes cheap.
		forged, err := c.sameContent(ctx, cr, f, parts)
		if err != nil {
			return res, fail(op, cr, err, "")
		}
		if forged != nil {
			_, aerr := c.abortUpload(ctx, cr)
			return res, fail(op, cr, joinCleanup(fmt.Errorf("%w: %w", ErrKeyTaken, forged), aerr), hintForged)
		}
	}
	if mine {
		res.Created = true
	} else {
		res.AlreadyCommitted = true
	}
	// When another upload made the object, ours is left over: discard it,
	// unless it is known to be gone already.
	return c.succeed(ctx, op, cr, res, f, !mine && state != uploadGone, state, warns)
}

// isUploadOpen tells whether the token's upload still exists (one ListParts
// of at most one part).
func (c *Committer) isUploadOpen(ctx context.Context, cr recoverable.CommitToken) (bool, error) {
	_, err := call(ctx, c, "list parts", func(ctx context.Context) (*s3.ListPartsOutput, error) {
		return c.client.ListParts(ctx, &s3.ListPartsInput{
			Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID), MaxParts: aws.Int32(1),
		})
	})
	switch {
	case err == nil:
		return true, nil
	case s3call.IsNoSuchUpload(err):
		return false, nil
	default:
		return false, err
	}
}

// settleLogAfter is how long a settle wait goes on before it is logged.
const settleLogAfter = 30 * time.Second

// uploadGone decides when the upload no longer exists: it was completed (by
// us, another attempt, or someone else), or aborted, or discarded by the
// server after a conflict. "Gone, and nothing at the key" is ambiguous while
// another completion of the same upload may still be landing (servers drop
// the upload before the object shows), so the key is polled, with backoff,
// for Options.SettleTimeout before that is taken for an answer.
func (c *Committer) uploadGone(ctx context.Context, op string, cr recoverable.CommitToken, res Result, ambiguous, conflicted bool, parts []recoverable.Part) (Result, error) {
	start := time.Now()
	deadline := start.Add(mutSettle(c.opts.SettleTimeout))
	logged := false
	for n := 1; ; n++ {
		f, err := c.lookup(ctx, cr)
		if err != nil {
			return res, fail(op, cr, err, "")
		}
		if f.Exists {
			if !f.Is(cr.Size(), cr.CRC()) {
				err := fmt.Errorf("%w: the upload is gone and the key holds %s; the token describes %s", ErrKeyTaken, f, describe(cr.Size(), cr.CRC()))
				return res, fail(op, cr, err, hintKeyTaken)
			}
			forged, err := c.sameContent(ctx, cr, f, parts)
			if err != nil {
				return res, fail(op, cr, err, "")
			}
			if forged != nil {
				return res, fail(op, cr, fmt.Errorf("%w: %w", ErrKeyTaken, forged), hintForged)
			}
			if ambiguous {
				res.Created = true
			} else {
				res.AlreadyCommitted = true
			}
			return c.succeed(ctx, op, cr, res, f, false, uploadGone, nil)
		}
		now := time.Now()
		if !now.Before(deadline) {
			break
		}
		if !logged && now.Sub(start) >= settleLogAfter {
			logged = true
			c.opts.Logger.WarnContext(ctx, "s3once: upload gone and nothing at the key yet; waiting for a completion in flight elsewhere to land",
				"bucket", cr.Bucket, "key", cr.Key, "upload", cr.UploadID, "waited", now.Sub(start).Round(time.Second), "settle_timeout", c.opts.SettleTimeout)
		}
		if err := c.sleepUntil(ctx, now.Add(min(c.backoff(ctx, n), deadline.Sub(now)))); err != nil {
			return res, fail(op, cr, fmt.Errorf("waiting for the key to settle after the upload was found gone: %w", err), "")
		}
	}
	waited := fmt.Sprintf("upload %s does not exist and nothing appeared at the key in the %v settle window (Options.SettleTimeout), long enough for any completion of the upload in flight elsewhere to land", cr.UploadID, c.opts.SettleTimeout)
	if conflicted {
		return res, fail(op, cr, fmt.Errorf("%w: the server answered 409 ConditionalRequestConflict, then %s", ErrRewriteRequired, waited), hintRewrite)
	}
	return res, fail(op, cr, fmt.Errorf("%w: %s", ErrDataLost, waited), hintDataLost)
}

// succeed tidies up after a verified commit. abort asks for the token's
// upload to be discarded as left over; state is what is known of it.
//
// Result.UploadAborted must say that an open upload was discarded, and an
// abort's reply cannot tell: MinIO answers 204 to the abort of an upload
// that was completed, where S3 answers 404 NoSuchUpload. So an upload not
// seen open by this call is looked at first (one ListParts of one part, on
// this already-committed path only), and one found gone is left alone. If
// that look fails, the upload is aborted all the same (clean-up is the
// point) and not reported aborted: the failure is in Result.Warning.
func (c *Committer) succeed(ctx context.Context, op string, cr recoverable.CommitToken, res Result, f found, abort bool, state uploadState, warns []error) (Result, error) {
	res.ETag = f.ETag
	res.ReadBack = f.ReadBack
	cctx, cancel := c.cleanupContext(ctx)
	defer cancel()
	if abort && state == uploadUnknown {
		open, err := c.isUploadOpen(cctx, cr)
		switch {
		case err != nil:
			warns = append(warns, fmt.Errorf("check whether the left-over upload is open: %w", err))
		case open:
			state = uploadOpen
		default:
			abort = false
		}
	}
	if abort {
		aborted, err := c.abortUpload(cctx, cr)
		res.UploadAborted = aborted && state == uploadOpen
		if err != nil {
			warns = append(warns, err)
		}
	}
	n, err := c.deleteSideObjects(cctx, cr)
	res.SideObjectsDeleted = n
	if err != nil {
		warns = append(warns, err)
	}
	if len(warns) > 0 {
		res.Warning = fail(op+" clean-up", cr, errors.Join(warns...), "the commit succeeded; the sweep will remove what is left")
	}
	return res, nil
}

// joinCleanup adds a clean-up failure to an error.
func joinCleanup(err, cleanup error) error {
	if cleanup == nil {
		return err
	}
	return fmt.Errorf("%w (and clean-up failed: %w)", err, cleanup)
}

// completeInput builds the completion of exactly parts: conditional unless
// Options.AllowUnconditional, with the parts' and the object's CRC64NVME
// where the upload takes checksums.
func (c *Committer) completeInput(cr recoverable.CommitToken, parts []recoverable.Part, useCRC bool) *s3.CompleteMultipartUploadInput {
	cp := make([]s3call.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = s3call.CompletedPart{Number: p.Number, ETag: p.ETag, CRC: p.CRC}
	}
	return s3call.CompleteInput(s3call.Completion{
		Bucket: cr.Bucket, Key: cr.Key, UploadID: cr.UploadID, Parts: cp,
		Size: cr.Size(), CRC: cr.CRC(), Checksums: useCRC, IfNoneMatch: !c.opts.AllowUnconditional && !mutNoIfNoneMatch(),
	})
}

// verifyParts lists and checks the upload's parts. useCRC says whether the
// upload takes CRC64NVME checksums (the completion must then carry every
// part's, and may carry the object's).
func (c *Committer) verifyParts(ctx context.Context, cr recoverable.CommitToken) (parts []recoverable.Part, useCRC bool, err error) {
	l := &partLister{c: c, upto: int32(cr.Parts.Count), allCRC: true}
	parts, err = recoverable.VerifyParts(ctx, l, cr.Bucket, cr.Key, cr.UploadID, cr.Parts)
	if err != nil {
		return nil, false, err
	}
	switch l.alg {
	case types.ChecksumAlgorithmCrc64nvme:
		useCRC = l.allCRC
	case "":
		// A server that does not say: send checksums if it listed them.
		useCRC = l.allCRC && len(parts) > 0
	}
	return parts, useCRC, nil
}

// partLister lists parts with the committer's retries and notes the upload's
// checksum algorithm and whether every part up to upto lists a CRC64NVME.
type partLister struct {
	c      *Committer
	upto   int32
	alg    types.ChecksumAlgorithm
	allCRC bool
	first  bool
}

func (l *partLister) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	// VerifyParts says what it was doing; say only how it went.
	out, err := call(ctx, l.c, "", func(ctx context.Context) (*s3.ListPartsOutput, error) {
		return l.c.client.ListParts(ctx, in, opts...)
	})
	if err != nil {
		return nil, err
	}
	if !l.first {
		l.first = true
		l.alg = out.ChecksumAlgorithm
	}
	for _, p := range out.Parts {
		if aws.ToInt32(p.PartNumber) <= l.upto && aws.ToString(p.ChecksumCRC64NVME) == "" {
			l.allCRC = false
		}
	}
	return out, nil
}

// abortUpload discards the token's upload. aborted is true when this call
// removed it; an upload that is already gone is not an error.
func (c *Committer) abortUpload(ctx context.Context, cr recoverable.CommitToken) (aborted bool, err error) {
	cctx, cancel := c.cleanupContext(ctx)
	defer cancel()
	_, err = call(cctx, c, "abort upload", func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
		return c.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID),
		})
	})
	if err != nil {
		if s3call.IsNoSuchUpload(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
