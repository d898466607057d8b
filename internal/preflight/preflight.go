// Package preflight probes an S3 bucket the way a writing s3once pipeline
// uses it, before the pipeline writes anything: that the endpoint answers,
// that the credentials are accepted, that the bucket exists, that every call
// the sink makes is allowed where it makes it, that the server takes the
// CRC64NVME checksums and honours If-None-Match on PutObject and on
// CompleteMultipartUpload, and what the bucket's own settings (required
// encryption, versioning, Object Lock, owner) mean for the sink. Each probe
// is made once (s3call.Probes), under s3once's own keys (ownkeys), and
// removed afterwards. Run returns every problem found, not just the first,
// as a Report; the sink's public Preflight turns a Config into a Target and
// a Report into its PreflightError, whose messages are Problem.String's.
// The package knows nothing of Beam or of the sink's Config.
package preflight

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
)

// CallTimeout bounds each call of the preflight (the SDK's retries run
// inside it). The removal of its probes, which runs even when ctx is done,
// is bounded by s3call.DefaultCleanupTimeout.
const CallTimeout = s3call.BaseCallTimeout

// API is what the probes call; *s3.Client has it.
type API interface {
	s3call.ProbeAPI
	committer.S3
}

// Problem is one thing the preflight found wrong.
type Problem struct {
	// Check says what was tried ("create a multipart upload", ...).
	Check string
	// Target is the s3:// URL the check used, if any.
	Target string
	// Permission is the IAM action the check needs, if that is the issue.
	Permission string
	// Hint says what to do about it.
	Hint string
	// Err is the failure.
	Err error
}

// String is the problem as one line: the check, its target, the failure
// (Brief), the permission it needs and the hint.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Check)
	if p.Target != "" {
		b.WriteString(" (" + p.Target + ")")
	}
	b.WriteString(": ")
	b.WriteString(Brief(p.Err))
	if p.Permission != "" {
		b.WriteString(" [needs " + p.Permission + "]")
	}
	if p.Hint != "" {
		b.WriteString("; " + p.Hint)
	}
	return b.String()
}

// Report is what Run found.
type Report struct {
	Problems []Problem
	// Unchecked names the checks that were not run because an earlier
	// problem made them pointless (an unreachable endpoint, rejected
	// credentials, a missing bucket).
	Unchecked []string
	// Leftovers are probes that could not be removed (keys, upload IDs);
	// the sweep removes them once they are older than its cutoff.
	Leftovers []string
}

// Target is what the probes need to know of the sink's configuration.
type Target struct {
	Bucket string
	// Endpoint is the S3 server's URL, "" for AWS (it is only named in a
	// problem).
	Endpoint string
	// Prefix is the output prefix, without a trailing "/"; StagingPrefix
	// the staging prefix as s3call.StagingPrefix gives it.
	Prefix, StagingPrefix string
	// DisableChecksums: the writer sends no CRC64NVME checksums.
	DisableChecksums bool
	// Encryption is the server-side encryption the configuration asks for
	// ("" for none); CustomerKey says it asks for SSE-C.
	Encryption  string
	CustomerKey bool
	// ExpectedBucketOwner and VersionedBucket are the configuration's.
	ExpectedBucketOwner string
	VersionedBucket     bool
	// CheckFolder compares the output folder's settings marker with this
	// run's settings, through a client that makes each call once; nil when
	// the configuration is not valid, and the settings are then unknown.
	CheckFolder func(ctx context.Context, c *s3bucket.Client) error
}

// Run runs the checks over api, removes every probe, and reports what it
// found. Problems and Leftovers both empty means the bucket is fit.
func Run(ctx context.Context, api API, t Target) Report {
	var r Report
	p := &prober{api: api, probes: s3call.NewProbes(api, t.Bucket, CallTimeout), t: t, r: &r, id: probeID()}
	p.run(ctx)
	p.cleanup(ctx)
	return r
}

// prober runs the checks in order. After a fatal problem (the endpoint,
// the credentials or the bucket), the rest are listed as unchecked.
type prober struct {
	// probes makes the calls, each once (s3call.Probes); api is their
	// client, for the committer's probes.
	probes *s3call.Probes
	api    API
	t      Target
	r      *Report
	id     string
	fatal  bool
	calls  int  // checks run so far
	first  bool // the check being classified is the first

	// What to remove at the end.
	uploads []probeUpload
	objects []string
}

type probeUpload struct{ key, id string }

func probeID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// The checks, in order; each may depend on the ones before it. Only the
// calls a writing pipeline makes are checked: the sweep's (listing multipart
// uploads, reading lifecycle rules) are not, since it may well run with
// other credentials.
func (p *prober) run(ctx context.Context) {
	bucket := p.t.Bucket
	staging := strings.TrimSuffix(p.t.StagingPrefix, "/") + "/"
	out := ""
	if p.t.Prefix != "" {
		out = p.t.Prefix + "/"
	}
	// The probes' keys are s3once's own (ownkeys), so the sweep removes what
	// a preflight killed midway leaves.
	outKey := ownkeys.PreflightOutputKey(p.t.Prefix, p.id)
	sideKey := ownkeys.PreflightSideKey(p.t.StagingPrefix, p.id)
	doneKey := ownkeys.PreflightCompleteKey(p.t.StagingPrefix, p.id)

	// 1. The bucket, the endpoint and the credentials, through the listing
	// the sink makes of side objects; then the listing permission under the
	// output prefix, without which S3 answers a HEAD of a missing key with
	// 403 instead of 404 (and a commit cannot tell "not there yet").
	p.check(ctx, "list the staging prefix", bucket, staging, "s3:ListBucket", func(ctx context.Context) error {
		return p.probes.List(ctx, staging)
	})
	p.check(ctx, "list the output prefix", bucket, out, "s3:ListBucket", func(ctx context.Context) error {
		return p.probes.List(ctx, out)
	})

	// The folder's settings marker: a folder written with other
	// byte-affecting settings is refused up front (Target.CheckFolder).
	p.checkSettings(ctx)

	// 2. A file's upload under the output prefix, never completed.
	body := bytes.Repeat([]byte("s3once preflight probe; safe to delete\n"), 4)
	if id, ok := p.createUpload(ctx, "create a multipart upload under the output prefix", outKey); ok {
		if etag, ok := p.uploadPart(ctx, "upload a part under the output prefix", outKey, id, 1, body); ok {
			p.listParts(ctx, outKey, id, etag)
		}
		p.check(ctx, "abort a multipart upload", bucket, outKey, "s3:AbortMultipartUpload", func(ctx context.Context) error {
			err := p.probes.Abort(ctx, outKey, id)
			if err == nil {
				p.forgetUpload(id)
			}
			return err
		})
	}
	p.check(ctx, "look at an output key (HEAD)", bucket, outKey, "s3:GetObject", func(ctx context.Context) error {
		_, err := p.probes.Head(ctx, outKey)
		return absentIsFine(err)
	})
	p.check(ctx, "read an output key", bucket, outKey, "s3:GetObject", func(ctx context.Context) error {
		_, err := p.probes.Read(ctx, outKey)
		return absentIsFine(err)
	})

	// 3. A side object under the staging prefix: put, read back, delete.
	sideOK := p.check(ctx, "put a side object", bucket, sideKey, "s3:PutObject", func(ctx context.Context) error {
		err := p.probes.Put(ctx, sideKey, body, !p.t.DisableChecksums, "")
		if err == nil {
			p.objects = append(p.objects, sideKey)
		}
		return err
	})
	if sideOK {
		p.check(ctx, "read a side object", bucket, sideKey, "s3:GetObject", func(ctx context.Context) error {
			got, err := p.probes.Read(ctx, sideKey)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, body) {
				return fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(body))
			}
			return nil
		})
		p.check(ctx, "delete a side object", bucket, sideKey, "s3:DeleteObject", func(ctx context.Context) error {
			err := p.probes.Delete(ctx, sideKey)
			if err == nil {
				p.forgetObject(sideKey)
			}
			return err
		})
	}

	// The bucket's own settings: encryption required, versioning, Object
	// Lock, owner (bucket.go).
	p.checkBucketSettings(ctx)

	// 4. A commit: complete an upload with If-None-Match: *, look at it,
	// then check that a second conditional completion is refused.
	p.conditionalComplete(ctx, doneKey, body)

	// 5. Conditional PutObject, by the committer's own probe.
	if p.fatal {
		p.r.Unchecked = append(p.r.Unchecked, "conditional PutObject")
		return
	}
	c, err := p.committer()
	if err != nil {
		p.add("set up the committer", "", "", "", err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 2*CallTimeout)
	defer cancel()
	res, err := c.Preflight(cctx, bucket, p.t.StagingPrefix)
	switch {
	case errors.Is(err, committer.ErrConditionalWritesUnsupported):
		p.add("conditional PutObject (If-None-Match: *)", "s3://"+bucket+"/"+res.ProbeKey, "", "use a server that honours If-None-Match; s3once cannot keep a key written once without it", err)
	case err != nil:
		p.classify("conditional PutObject (If-None-Match: *)", bucket, res.ProbeKey, "s3:PutObject", err)
	case p.t.DisableChecksums && !res.ETagsAreMD5:
		// Without part checksums, parts are recognised by their ETags; on a
		// bucket whose ETags are not MD5s (SSE-KMS, SSE-C), a part uploaded
		// again with the same bytes (a retry landing late, a zombie attempt)
		// gets a new one, and the file can then never be committed.
		p.add("part identity without checksums", "s3://"+bucket, "",
			"this bucket's ETags are not MD5s of the bytes (SSE-KMS or SSE-C encryption): unset Config.DisableChecksums, or write to a bucket without that encryption",
			errors.New("DisableChecksums is set and the server's ETags are not content hashes, so a re-uploaded part could never be recognised"))
	}
	// The committer deletes its probe; delete it again in the clean-up in
	// case that failed (a missing key is no error there).
	if res.ProbeKey != "" {
		p.objects = append(p.objects, res.ProbeKey)
	}
}

// committer is a committer over the preflight's client that makes each of
// its calls once, for the probes that are committer operations (the
// conditional PutObject probe, the look at the folder's settings marker).
func (p *prober) committer() (*committer.Committer, error) {
	return committer.New(p.api, committer.Options{StagingPrefix: p.t.StagingPrefix, MaxAttempts: 1, MaxRounds: 1, CallTimeout: CallTimeout})
}

// bucket is a bucket client over the preflight's client that makes each of
// its calls once, like committer's, for the probes that read the output
// folder (its settings marker).
func (p *prober) bucket() *s3bucket.Client {
	return s3bucket.New(p.api, s3bucket.Options{MaxAttempts: 1, MaxRounds: 1, CallTimeout: CallTimeout})
}

// conditionalComplete completes a small upload at key with If-None-Match: *
// (as a commit does), checks it with HEAD, then expects a second conditional
// completion at the same key to be refused.
func (p *prober) conditionalComplete(ctx context.Context, key string, body []byte) {
	bucket := p.t.Bucket
	first, ok := p.createUpload(ctx, "create a multipart upload under the staging prefix", key)
	if !ok {
		return
	}
	etag, ok := p.uploadPart(ctx, "upload a part under the staging prefix", key, first, 1, body)
	if !ok {
		return
	}
	completed := p.check(ctx, "complete a multipart upload with If-None-Match: *", bucket, key, "s3:PutObject", func(ctx context.Context) error {
		err := p.probes.Complete(ctx, p.completion(key, first, etag, body))
		if err == nil {
			p.forgetUpload(first)
			p.objects = append(p.objects, key)
		} else if s3call.IsNotImplemented(err) {
			return fmt.Errorf("%w: %w", committer.ErrConditionalWritesUnsupported, err)
		}
		return err
	})
	if !completed {
		return
	}
	p.check(ctx, "look at a committed object (HEAD)", bucket, key, "s3:GetObject", func(ctx context.Context) error {
		n, err := p.probes.Head(ctx, key)
		if err != nil {
			return err
		}
		if n != int64(len(body)) {
			return fmt.Errorf("the completed object holds %d bytes, %d were uploaded", n, len(body))
		}
		return nil
	})
	second, ok := p.createUpload(ctx, "create a second multipart upload under the staging prefix", key)
	if !ok {
		return
	}
	other := append([]byte("second "), body...)
	etag, ok = p.uploadPart(ctx, "upload a part under the staging prefix", key, second, 1, other)
	if !ok {
		return
	}
	p.check(ctx, "refuse a second completion with If-None-Match: *", bucket, key, "", func(ctx context.Context) error {
		err := p.probes.Complete(ctx, p.completion(key, second, etag, other))
		switch {
		case err == nil:
			p.forgetUpload(second)
			return fmt.Errorf("%w: a second CompleteMultipartUpload with If-None-Match: * replaced the object", committer.ErrConditionalWritesUnsupported)
		case s3call.IsPreconditionFailed(err) || s3call.IsConflict(err):
			return nil
		case s3call.IsNotImplemented(err):
			return fmt.Errorf("%w: %w", committer.ErrConditionalWritesUnsupported, err)
		}
		return err
	})
}

// completion is a conditional completion of the one part body, as a commit
// sends it.
func (p *prober) completion(key, id, etag string, body []byte) s3call.Completion {
	crc := crc64nvme.Checksum(body)
	return s3call.Completion{
		Bucket: p.t.Bucket, Key: key, UploadID: id,
		Parts: []s3call.CompletedPart{{Number: 1, ETag: etag, CRC: crc}},
		Size:  int64(len(body)), CRC: crc, Checksums: !p.t.DisableChecksums, IfNoneMatch: true,
	}
}

func (p *prober) createUpload(ctx context.Context, what, key string) (string, bool) {
	var id string
	ok := p.check(ctx, what, p.t.Bucket, key, "s3:PutObject", func(ctx context.Context) error {
		var err error
		if id, err = p.probes.CreateUpload(ctx, key, !p.t.DisableChecksums); err != nil {
			return err
		}
		p.uploads = append(p.uploads, probeUpload{key: key, id: id})
		return nil
	})
	return id, ok
}

func (p *prober) uploadPart(ctx context.Context, what, key, id string, n int32, body []byte) (string, bool) {
	var etag string
	ok := p.check(ctx, what, p.t.Bucket, key, "s3:PutObject", func(ctx context.Context) error {
		var err error
		etag, err = p.probes.UploadPart(ctx, key, id, n, body, !p.t.DisableChecksums)
		return err
	})
	return etag, ok
}

func (p *prober) listParts(ctx context.Context, key, id, etag string) {
	p.check(ctx, "list the parts of a multipart upload", p.t.Bucket, key, "s3:ListMultipartUploadParts", func(ctx context.Context) error {
		etags, err := p.probes.ListParts(ctx, key, id)
		if err != nil {
			return err
		}
		if len(etags) != 1 || strings.Trim(etags[0], `"`) != strings.Trim(etag, `"`) {
			return fmt.Errorf("the server lists %d parts, not the one just uploaded", len(etags))
		}
		return nil
	})
}

// check runs one call, unless a fatal problem came before, and records its
// failure. It reports whether the call succeeded.
func (p *prober) check(ctx context.Context, what, bucket, key, perm string, fn func(context.Context) error) bool {
	p.first = p.calls == 0
	p.calls++
	if p.fatal {
		p.r.Unchecked = append(p.r.Unchecked, what)
		return false
	}
	if err := ctx.Err(); err != nil {
		p.add(what, "", "", "", context.Cause(ctx))
		p.fatal = true
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if err := fn(cctx); err != nil {
		p.classify(what, bucket, key, perm, err)
		return false
	}
	return true
}

// classify records a failed call, and says whether nothing else can work.
func (p *prober) classify(what, bucket, key, perm string, err error) {
	target := "s3://" + bucket + "/" + key
	code := s3call.CodeOf(err)
	switch {
	case errors.Is(err, committer.ErrConditionalWritesUnsupported):
		p.add(what, target, "", "use a server that honours If-None-Match on PutObject and CompleteMultipartUpload; s3once cannot keep a key written once without it", err)
	case s3call.IsUnreachable(err) || (p.first && s3call.IsNoReply(err)):
		p.fatal = true
		ep := p.t.Endpoint
		if ep == "" {
			ep = "AWS S3"
		}
		p.add("reach the S3 endpoint", ep, "", "check Config.Endpoint, that the server runs, and the network", err)
	case code == s3call.Unauthenticated:
		p.fatal = true
		p.add("authenticate", "", "", "the credentials were rejected or none were found: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE (or the variables or file Config.Credentials names) and the clock", err)
	case code == s3call.NoSuchBucket:
		p.fatal = true
		p.add("find the bucket", "s3://"+bucket, "", "create the bucket, or fix the bucket name", err)
	case code == s3call.InvalidBucketName:
		p.fatal = true
		p.add("use the bucket name", "s3://"+bucket, "",
			fmt.Sprintf("the server refuses the bucket name %q: fix Config.Bucket (bucket names have 3 to 63 lower-case letters, digits, '.' and '-')", bucket), err)
	case code == s3call.WrongRegion:
		p.fatal = true
		p.add("reach the bucket in its region", "s3://"+bucket, "", "set the bucket's region (Config.Region or AWS_REGION)", err)
	case code == s3call.AccessDenied:
		p.add(what, target, perm, "", err)
	case !p.t.DisableChecksums && s3call.IsChecksumRejected(err):
		p.add(what, target, "", "the server rejects the CRC64NVME checksum headers: set Config.DisableChecksums", err)
	default:
		p.add(what, target, "", "", err)
	}
}

func (p *prober) add(check, target, perm, hint string, err error) {
	p.r.Problems = append(p.r.Problems, Problem{Check: check, Target: target, Permission: perm, Hint: hint, Err: err})
}

func (p *prober) forgetUpload(id string) {
	for i, u := range p.uploads {
		if u.id == id {
			p.uploads = append(p.uploads[:i], p.uploads[i+1:]...)
			return
		}
	}
}

func (p *prober) forgetObject(key string) {
	for i, k := range p.objects {
		if k == key {
			p.objects = append(p.objects[:i], p.objects[i+1:]...)
			return
		}
	}
}

// cleanup removes what the probes left, on a context of its own.
func (p *prober) cleanup(ctx context.Context) {
	cctx, cancel := s3call.Detached(ctx, s3call.DefaultCleanupTimeout)
	defer cancel()
	bucket := p.t.Bucket
	for _, u := range p.uploads {
		err := p.probes.Abort(cctx, u.key, u.id)
		if err != nil && !s3call.IsNotFound(err) {
			p.r.Leftovers = append(p.r.Leftovers, fmt.Sprintf("upload %s of s3://%s/%s (%v)", u.id, bucket, u.key, err))
		}
	}
	p.uploads = nil
	if len(p.objects) == 0 {
		return
	}
	// DeleteObjects is how the committer removes side objects.
	if err := p.probes.DeleteBatch(cctx, p.objects); err != nil {
		p.classify("delete objects in a batch (DeleteObjects)", bucket, p.objects[0], "s3:DeleteObject", err)
		for _, k := range p.objects {
			if derr := p.probes.Delete(cctx, k); derr != nil && !s3call.IsNotFound(derr) {
				p.r.Leftovers = append(p.r.Leftovers, "s3://"+bucket+"/"+k)
			}
		}
	}
	p.objects = nil
}

// absentIsFine turns "no such key" into success: the probe key is new.
func absentIsFine(err error) error {
	if s3call.IsNotFound(err) {
		return nil
	}
	return err
}

// checkSettings is the preflight's look at the output folder: a marker of
// other settings, or files of another output version without a marker, is
// a problem that names each setting. It is skipped when the configuration
// is not valid (no CheckFolder). Its calls go through a client that tries
// each once, so a misconfiguration fails at once.
func (p *prober) checkSettings(ctx context.Context) {
	if p.t.CheckFolder == nil {
		p.r.Unchecked = append(p.r.Unchecked, "the output folder's settings marker (the configuration is not valid)")
		return
	}
	key := ownkeys.SettingsKey(p.t.Prefix)
	p.check(ctx, "compare the output folder's settings marker", p.t.Bucket, key, "s3:GetObject", func(ctx context.Context) error {
		return p.t.CheckFolder(ctx, p.bucket())
	})
}
