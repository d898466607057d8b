package s3call

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
	// AccessKeyID, SecretAccessKey and SessionToken, when AccessKeyID is
	// set, replace the chain's credentials.
	AccessKeyID, SecretAccessKey, SessionToken string
	// MaxAttempts is the SDK retryer's budget per call; zero keeps the
	// SDK's default.
	MaxAttempts int
	// DisableChecksums stops the SDK from adding checksums of its own,
	// for servers that reject the headers.
	DisableChecksums bool
	// Options are applied to the client's options after these settings
	// (request settings every call carries, say).
	Options []func(*s3.Options)
}

// ErrNoRegion: ClientOptions.RequireRegion is set, no Endpoint is given, and
// the configuration chain names no region.
var ErrNoRegion = errors.New("no region: set AWS_REGION, a profile's region, or the region option")

// LoadConfig is the AWS configuration NewClient builds its client from:
// the standard chain, with o's region, profile, static credentials and
// retry attempts on top (o's endpoint, addressing, checksum and client
// options are the client's, not the configuration's).
func LoadConfig(ctx context.Context, o ClientOptions) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.Profile))
	}
	if o.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)))
	}
	if o.MaxAttempts > 0 {
		opts = append(opts, config.WithRetryMaxAttempts(o.MaxAttempts))
	}
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
	return cfg, nil
}

// NewClient builds an S3 client from the standard AWS configuration chain
// and o. It is the one place s3once's programs build clients.
func NewClient(ctx context.Context, o ClientOptions) (*s3.Client, error) {
	cfg, err := LoadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(so *s3.Options) {
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
