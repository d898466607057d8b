package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/preflight"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
)

// ErrPreflight is wrapped by every error Preflight returns. Its message
// carries the stable code errcode.Preflight, and so does a PreflightError's.
var ErrPreflight = errcode.New(errcode.Preflight, "s3once preflight failed")

// PreflightProblem is one thing Preflight found wrong.
type PreflightProblem struct {
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
// (without the SDK's request ids), the permission it needs and the hint.
func (p PreflightProblem) String() string { return preflight.Problem(p).String() }

// PreflightError lists everything Preflight found wrong.
type PreflightError struct {
	Bucket   string
	Endpoint string // "" for AWS
	Problems []PreflightProblem
	// Unchecked names the checks that were not run because an earlier
	// problem made them pointless (an unreachable endpoint, rejected
	// credentials, a missing bucket).
	Unchecked []string
	// Leftovers are probes that could not be removed (keys, upload IDs);
	// the sweep removes them once they are older than its cutoff.
	Leftovers []string
}

func (e *PreflightError) Error() string {
	var b strings.Builder
	where := "s3://" + e.Bucket
	if e.Endpoint != "" {
		where += " at " + e.Endpoint
	}
	n := len(e.Problems)
	fmt.Fprintf(&b, "s3once preflight of %s found %d problem", where, n)
	if n != 1 {
		b.WriteString("s")
	}
	b.WriteString(" (no data was written) " + errcode.Preflight.Token() + ":")
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	if len(e.Unchecked) > 0 {
		b.WriteString("\n  not checked, because of the above: " + strings.Join(e.Unchecked, ", "))
	}
	if len(e.Leftovers) > 0 {
		b.WriteString("\n  probes left behind (the sweep removes them): " + strings.Join(e.Leftovers, ", "))
	}
	return b.String()
}

// Unwrap returns ErrPreflight and every problem's error, so that errors.Is
// finds ErrInvalidConfig, committer.ErrConditionalWritesUnsupported and the
// like.
func (e *PreflightError) Unwrap() []error {
	errs := []error{ErrPreflight}
	for _, p := range e.Problems {
		errs = append(errs, p.Err)
	}
	return errs
}

// Preflight checks, before a pipeline writes anything, that cfg can work:
// the configuration itself (Validate), that the endpoint answers, that the
// credentials are accepted, that the bucket exists, that every S3 call the
// sink makes is allowed where the sink makes it, that the server takes the
// CRC64NVME checksums the writer sends (unless DisableChecksums), and that
// it honours If-None-Match on PutObject and on CompleteMultipartUpload,
// which the exactly-once commit relies on.
//
// It runs on the driver with the driver's credentials: on a runner whose
// workers have other credentials, the workers' permissions are not what it
// checks.
//
// The calls it makes: ListObjectsV2 under the prefixes; a multipart upload
// under the output prefix (create, upload part, list parts, abort: never
// completed, so readers see nothing), HeadObject and GetObject of a key that
// does not exist there; under the staging prefix, a side object (put, get,
// delete), a multipart upload completed with If-None-Match: * and then a
// second one that must be refused, both removed with DeleteObjects; and
// committer.Preflight's probe of conditional PutObject. Every probe is
// removed afterwards; one that cannot be is named in the error, and the
// sweep removes it later.
//
// Before any of them it checks Beam's --endpoint flag (CheckBeamEndpoint):
// where that holds the S3 server's URL, Preflight makes no S3 call at all
// and reports it, with any problem of the configuration itself.
//
// Preflight returns nil, or a *PreflightError (wrapping ErrPreflight) that
// lists every problem found, not just the first.
func Preflight(ctx context.Context, cfg Config) error {
	pe := &PreflightError{Bucket: cfg.Bucket, Endpoint: cfg.Endpoint}
	beamErr := CheckBeamEndpoint(cfg.Endpoint)
	if beamErr != nil {
		pe.Problems = append(pe.Problems, PreflightProblem{Check: "check Beam's --endpoint", Err: beamErr})
	}
	s, err := cfg.settings()
	if err != nil {
		pe.Problems = append(pe.Problems, PreflightProblem{Check: "check the configuration", Err: err})
	}
	if beamErr != nil {
		pe.Unchecked = append(pe.Unchecked, "every S3 call (the S3 server's URL went to Beam's --endpoint)")
		return pe
	}
	if err != nil {
		var why string
		if s, why = connectionSettings(cfg); why != "" {
			pe.Unchecked = append(pe.Unchecked, "every S3 call ("+why+")")
			return pe
		}
	}
	client, err := s.newClient(ctx, s3call.NewThrottle(s.ThrottleBudget))
	if errors.Is(err, ErrCredentialsMissing) {
		pe.Problems = append(pe.Problems, PreflightProblem{Check: "find credentials", Err: err})
		pe.Unchecked = append(pe.Unchecked, "every S3 call (no credentials to sign it with)")
		return pe
	}
	if err != nil {
		pe.Problems = append(pe.Problems, PreflightProblem{Check: "load the AWS configuration", Err: err,
			Hint: "check AWS_REGION, AWS_PROFILE and the shared config files"})
		return pe
	}
	if pr, ok := preflight.FindCredentials(ctx, client); !ok {
		pe.Problems = append(pe.Problems, PreflightProblem(pr))
		pe.Unchecked = append(pe.Unchecked, "every S3 call (no credentials to sign it with)")
		return pe
	}
	return probeBucket(ctx, client, s, pe)
}

// connectionSettings keeps what the S3 checks need of an invalid Config, if
// that part of it is sound; otherwise why says which part is not.
func connectionSettings(c Config) (s settings, why string) {
	s.folder = folder{Bucket: c.Bucket, Prefix: strings.TrimSuffix(c.Prefix, "/"), StagingPrefix: c.StagingPrefix, Connection: c.Connection}
	s.InlineTailMax = c.InlineTailMax
	if s.ThrottleBudget <= 0 {
		s.ThrottleBudget = s3call.DefaultThrottleBudget
	}
	s.StagingPrefix = s3call.StagingPrefix(s.StagingPrefix)
	switch {
	case checkBucket(s.Bucket) != nil:
		return s, "the bucket name is not usable"
	case len(c.Credentials.problems()) > 0:
		return s, "the credentials are not named right"
	case s.MaxAttempts < 0:
		return s, "MaxAttempts is negative"
	}
	if s.Endpoint != "" {
		if err := (Config{Bucket: "bucket", Connection: Connection{Endpoint: s.Endpoint}}).Validate(); err != nil {
			return s, "the endpoint is not usable"
		}
	}
	if checkPath("Prefix", s.Prefix, MaxPrefixLen) != nil ||
		checkPath("StagingPrefix", strings.TrimSuffix(s.StagingPrefix, "/"), MaxPrefixLen) != nil {
		return s, "the prefixes are not usable, so no probe key can be named"
	}
	return s, ""
}

// probeBucket runs the S3 checks (internal/preflight) over api, adds what
// they found to pe, and returns pe if it holds problems.
func probeBucket(ctx context.Context, api s3API, s settings, pe *PreflightError) error {
	t := preflight.Target{
		Bucket: s.Bucket, Endpoint: s.Endpoint, Prefix: s.Prefix, StagingPrefix: s.StagingPrefix,
		DisableChecksums: s.DisableChecksums, Encryption: s.Requests.Encryption, CustomerKey: s.Requests.customerKey(),
		ExpectedBucketOwner: s.Requests.ExpectedBucketOwner, VersionedBucket: s.Requests.VersionedBucket,
	}
	// The settings are known only of a valid Config (Format is empty only
	// when it is not).
	if s.Format != "" {
		now := s.markerSettings()
		t.CheckFolder = func(ctx context.Context, c *s3bucket.Client) error {
			_, err := judgeFolder(ctx, c, s.Bucket, s.Prefix, now, "")
			return err
		}
	}
	r := preflight.Run(ctx, api, t)
	for _, p := range r.Problems {
		pe.Problems = append(pe.Problems, PreflightProblem(p))
	}
	pe.Unchecked = append(pe.Unchecked, r.Unchecked...)
	pe.Leftovers = append(pe.Leftovers, r.Leftovers...)
	if len(pe.Problems) == 0 && len(pe.Leftovers) == 0 {
		return nil
	}
	if len(pe.Problems) == 0 {
		pe.Problems = append(pe.Problems, PreflightProblem{Check: "remove the probes", Err: errors.New("some probes could not be removed")})
	}
	return pe
}
