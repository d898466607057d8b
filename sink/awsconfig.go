package sink

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
)

// AWSConfig is the AWS configuration the sink's clients are built from,
// for a stage that reaches the same bucket through another S3 client (the
// Iceberg table stage's metadata writes): the standard chain with c's
// region, credentials (Config.Credentials, read where this runs) and
// MaxAttempts on top, and c's request
// settings (expected bucket owner, server-side encryption, SSE-C key,
// object settings, on every PutObject as on every multipart upload) on
// every call as middleware; the sink's retryer (no
// retry quota), its shared backoff for throttled calls, and a bound of
// each HTTP attempt (s3call.BaseCallTimeout, 30 s), since no Policy wraps
// those calls. The endpoint and
// addressing are the other client's to set (Config.Endpoint,
// Config.PathStyle). An SSE-C key is read where this runs.
func (c Config) AWSConfig(ctx context.Context) (aws.Config, error) {
	r, problems := c.requestSettings()
	if len(problems) > 0 {
		return aws.Config{}, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	req, err := r.build()
	if err != nil {
		return aws.Config{}, err
	}
	// The other client's objects are output as a whole (a table's
	// metadata files), written with PutObject as well as multipart.
	req.ObjectsOnPut = true
	// LoadConfig takes the region, credentials and MaxAttempts of the
	// options; the endpoint and addressing are the other client's.
	o, err := c.Connection.clientOptions(nil)
	if err != nil {
		return aws.Config{}, err
	}
	cfg, err := s3call.LoadConfig(ctx, o)
	if err != nil {
		return aws.Config{}, fmt.Errorf("s3once sink: %w", err)
	}
	var so s3.Options
	req.Apply(&so)
	cfg.APIOptions = append(cfg.APIOptions, so.APIOptions...)
	// The sink's retryer, shared backoff and attempt bound: the clients
	// built from this configuration make calls that no Policy wraps.
	s3call.NewThrottle(c.ThrottleBudget).ApplyConfig(&cfg, s3call.BaseCallTimeout)
	return cfg, nil
}
