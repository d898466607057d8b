package s3call

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// ClientOptions select an S3 endpoint and how to reach it. The zero value is
// AWS S3 with the standard configuration chain.
type ClientOptions struct {
	// Endpoint is an S3-compatible server's URL; empty for AWS.
	Endpoint string
	// Region; empty takes the chain's, and failing that us-east-1 (or
	// ErrNoRegion with RequireRegion and no Endpoint).
	Region        string
	RequireRegion bool
	// PathStyle addresses buckets as http://host/bucket/key.
	PathStyle bool
	// Profile is a shared-config profile; empty for the chain's default.
	Profile string
	// CredentialsFile, when set, is the one shared-credentials file the
	// chain reads (with Profile's section).
	CredentialsFile string
	// Credentials, when set, replaces the chain's credentials. The
	// options hold a provider, never the secret itself.
	Credentials aws.CredentialsProvider
	// MaxAttempts is the SDK retryer's budget per call; zero keeps the
	// SDK's default.
	MaxAttempts int
	// DisableChecksums stops the SDK from adding checksums of its own,
	// for servers that reject the headers.
	DisableChecksums bool
	// Throttle is the backoff the client's calls share while S3 answers
	// SlowDown, and their throttle budget; nil makes one with
	// DefaultThrottleBudget. Keep it to read its counters.
	Throttle *Throttle
	// Options are applied to the client's options after these settings
	// (request settings every call carries, say).
	Options []func(*s3.Options)
	// LogTo is where the SDK's own log lines go; nil means standard error.
	LogTo io.Writer
}

// quietIMDS is the SDK's standard logger without its warning that the
// instance-metadata service refused a token ("falling back to IMDSv1"),
// which any machine off EC2 whose address 169.254.169.254 answers prints
// when it has no credentials: the missing credentials are reported as
// such, by the call that needed them.
type quietIMDS struct{ logging.Logger }

func (q quietIMDS) Logf(c logging.Classification, format string, v ...any) {
	if c == logging.Warn && strings.HasPrefix(format, "falling back to IMDSv1") {
		return
	}
	q.Logger.Logf(c, format, v...)
}

// ErrNoRegion: ClientOptions.RequireRegion is set, no Endpoint is given, and
// the configuration chain names no region.
var ErrNoRegion = errors.New("no region: set AWS_REGION, a profile's region, or the region option")

// LoadConfig is the AWS configuration NewClient builds its client from:
// the standard chain, with o's region, profile, static credentials and
// logger on top, and o.MaxAttempts as its retry attempts where set (o's
// endpoint, addressing, throttle, checksum and client options are the
// client's, not the configuration's).
func LoadConfig(ctx context.Context, o ClientOptions) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.Profile))
	}
	if o.CredentialsFile != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{o.CredentialsFile}))
	}
	if o.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(o.Credentials))
	}
	logTo := o.LogTo
	if logTo == nil {
		logTo = os.Stderr
	}
	opts = append(opts, config.WithLogger(quietIMDS{logging.NewStandardLogger(logTo)}))
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if o.RequireRegion && o.Endpoint == "" {
			return aws.Config{}, ErrNoRegion
		}
		cfg.Region = "us-east-1"
	}
	if o.MaxAttempts > 0 {
		cfg.RetryMaxAttempts = o.MaxAttempts
	}
	return cfg, nil
}

// NewClient builds an S3 client from the standard AWS configuration chain
// and o. It is the one place s3once's programs build clients.
func NewClient(ctx context.Context, o ClientOptions) (*s3.Client, error) {
	cfg, err := LoadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	th := o.Throttle
	if th == nil {
		th = NewThrottle(0)
	}
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(so *s3.Options) {
		so.RetryMaxAttempts = cmp.Or(o.MaxAttempts, cfg.RetryMaxAttempts)
		th.Apply(so)
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		if o.DisableChecksums {
			so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}}, o.Options...)...), nil
}

// ApplyConfig readies cfg for S3 clients that s3once does not build but
// another library builds from it (iceberg-go's S3 file IO, for the table
// stage): the retryer of NewClient's clients, without a retry quota, with
// cfg's attempts; the throttle's shared backoff; and attemptTimeout as the
// bound of each HTTP attempt, request and answer body together. Such a
// client's calls carry no Policy, whose CallTimeout would bound each of
// their attempts: this bound takes its place, and an attempt it ends is
// retried like any broken connection, within the attempts.
func (t *Throttle) ApplyConfig(cfg *aws.Config, attemptTimeout time.Duration) {
	attempts := cfg.RetryMaxAttempts
	cfg.Retryer = func() aws.Retryer { return newRetryer(attempts) }
	cfg.APIOptions = append(cfg.APIOptions, t.install)
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTimeout(attemptTimeout)
}

// newRetryer is the SDK retryer of every client NewClient builds: the SDK's
// standard retryer (maxAttempts attempts: ClientOptions.MaxAttempts, else
// the configuration chain's, else the SDK's default of 3;
// jittered exponential backoff) with two changes.
//
//   - No retry quota (ratelimit.None). The SDK's default quota is a token
//     bucket of 500 per client, a retry costing 14 tokens and a throttled
//     retry 5: a SlowDown storm on a busy worker empties it within a few
//     seconds, and from then on every failing call of the client fails at
//     its first error, whatever its budget. Bounding retries is the
//     attempt count's and the Policy's job; ending a throttled call is the
//     throttle budget's.
//   - A throttling answer to a call made under a Policy is not retried by
//     the SDK: Do sends the call again after the lane's backoff, without
//     counting an attempt, until the budget ends it (see Throttle). A
//     throttling answer to any other call is retried as the standard
//     retryer does.
func newRetryer(maxAttempts int) aws.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		if maxAttempts > 0 {
			so.MaxAttempts = maxAttempts
		}
		if !mutNoThrottleBackoff() && !mutDefaultRetryQuota() {
			so.RateLimiter = ratelimit.None
		}
		so.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			var a *throttleAnswer
			if errors.As(err, &a) {
				return aws.FalseTernary
			}
			return aws.UnknownTernary
		})}, so.Retryables...)
	})
}
