package committer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

// PreflightResult is what the preflight probe learned about a bucket.
type PreflightResult struct {
	// ConditionalWrites is true when the server refused to overwrite the probe
	// object under If-None-Match: *.
	ConditionalWrites bool
	// ETagsAreMD5 is true when the server gave the probe object (written
	// without SSE-C headers) an ETag equal to the MD5 of its bytes, as S3 does
	// without KMS or customer-key encryption. Then a part's ETag is its MD5
	// and a multipart object's ETag is the MD5 of its parts' MD5s, which the
	// committer uses as a second, collision-resistant check of "already
	// committed". False means not known to be so (SSE-KMS, SSE-C, a probe
	// whose first write landed on an earlier try): a part re-uploaded with
	// the same bytes then gets another ETag and can be told from the one the
	// token recorded only by its listed checksum, so a caller must not
	// combine such a bucket with uploads that carry no part checksums
	// (recoverable.Options.DisableChecksums).
	ETagsAreMD5 bool
	// ProbeKey is the staging key the probe wrote.
	ProbeKey string
	// Warning is a failure to delete the probe object afterwards; the sweep
	// removes it later. The probe's answer stands.
	Warning error
}

// Preflight tells whether the server honours If-None-Match: it writes a small
// probe object under stagingPrefix (Options.StagingPrefix when
// empty) with If-None-Match: *, writes it again the same way, and expects the
// second write to be refused (412 Precondition Failed). The probe is deleted
// afterwards.
//
// A server that accepts the second write, or rejects the header outright,
// cannot guarantee that a key is written once: Preflight returns an error
// wrapping ErrConditionalWritesUnsupported, unless Options.AllowUnconditional
// is set, in which case it returns the result with ConditionalWrites false and
// no error. Other failures (network, permissions) are returned as they are;
// they say nothing about the server's support.
//
// Commit runs Preflight once per bucket by itself unless Options.SkipPreflight
// or AllowUnconditional is set.
func (c *Committer) Preflight(ctx context.Context, bucket, stagingPrefix string) (result PreflightResult, err error) {
	// Flat, not in a folder of its own: file-backed servers remove an emptied
	// folder, which races with a concurrent probe writing into it.
	if stagingPrefix == "" {
		stagingPrefix = c.opts.StagingPrefix // never empty: the default applied
	}
	key := ownkeys.ConditionalProbeKey(stagingPrefix, randomName())
	res := PreflightResult{ProbeKey: key}
	if bucket == "" {
		return res, fmt.Errorf("s3once preflight: %w: empty bucket", recoverable.ErrInvalidOptions)
	}
	put := func(ctx context.Context) (*s3.PutObjectOutput, error) {
		return call(ctx, c, "put probe object", func(ctx context.Context) (*s3.PutObjectOutput, error) {
			return c.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(key),
				Body:        strings.NewReader(probeBody),
				IfNoneMatch: aws.String("*"),
			})
		})
	}
	// The probe is deleted however the probe went; a failure to delete it is
	// reported in the result the caller receives (hence the named results).
	defer func() {
		cctx, cancel := c.cleanupContext(ctx)
		defer cancel()
		if _, derr := call(cctx, c, "delete probe object", func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
			return c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		}); derr != nil && !s3call.IsNotFound(derr) {
			result.Warning = fmt.Errorf("s3once preflight s3://%s/%s: %w; the sweep will remove the probe", bucket, key, derr)
		}
	}()
	unsupported := func(why string, err error) (PreflightResult, error) {
		res.ConditionalWrites = false
		if c.opts.AllowUnconditional {
			return res, nil
		}
		msg := fmt.Sprintf("s3once preflight s3://%s/%s: %s", bucket, key, why)
		if err != nil {
			return res, fmt.Errorf("%s: %w: %w; %s", msg, ErrConditionalWritesUnsupported, err, hintCondWrite)
		}
		return res, fmt.Errorf("%s: %w; %s", msg, ErrConditionalWritesUnsupported, hintCondWrite)
	}

	// The first write must succeed; a 412 means an earlier try of it landed.
	out, err := put(ctx)
	if err != nil && !s3call.IsPreconditionFailed(err) {
		if s3call.IsNotImplemented(err) {
			return unsupported("the server rejects If-None-Match", err)
		}
		return res, fmt.Errorf("s3once preflight s3://%s/%s: %w", bucket, key, err)
	}
	if err == nil {
		sum := md5.Sum([]byte(probeBody))
		res.ETagsAreMD5 = strings.EqualFold(unquote(aws.ToString(out.ETag)), hex.EncodeToString(sum[:]))
		c.learnETags(bucket, res.ETagsAreMD5)
	}
	_, err = put(ctx)
	switch {
	case err == nil:
		return unsupported("a second write with If-None-Match: * replaced the probe object", nil)
	case s3call.IsPreconditionFailed(err) || s3call.IsConflict(err):
		res.ConditionalWrites = true
		return res, nil
	case s3call.IsNotImplemented(err):
		return unsupported("the server rejects If-None-Match", err)
	default:
		return res, fmt.Errorf("s3once preflight s3://%s/%s: %w", bucket, key, err)
	}
}

// probeBody is what the probe object holds.
const probeBody = "s3once conditional-write probe; safe to delete\n"

// learnETags remembers what Preflight found out about the bucket's ETags.
func (c *Committer) learnETags(bucket string, md5s bool) { c.md5ETags.Store(bucket, md5s) }

// etagsAreMD5 tells whether a Preflight of this Committer found the bucket's
// ETags to be MD5 digests. Unknown counts as no.
func (c *Committer) etagsAreMD5(bucket string) bool {
	v, ok := c.md5ETags.Load(bucket)
	return ok && v.(bool)
}

// unquote strips the quotes around an ETag.
func unquote(etag string) string { return strings.Trim(etag, `"`) }
