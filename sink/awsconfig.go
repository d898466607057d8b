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
// region, static credentials and MaxAttempts on top, and c's request
// settings (expected bucket owner, server-side encryption, SSE-C key,
// object settings) on every call as middleware. The endpoint and
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
	// LoadConfig takes the region, credentials and MaxAttempts of the
	// options; the endpoint and addressing are the other client's.
	cfg, err := s3call.LoadConfig(ctx, c.connection().clientOptions(nil))
	if err != nil {
		return aws.Config{}, fmt.Errorf("s3once sink: %w", err)
	}
	var so s3.Options
	req.Apply(&so)
	cfg.APIOptions = append(cfg.APIOptions, so.APIOptions...)
	return cfg, nil
}
