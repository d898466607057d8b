package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// clientFlags select the S3 endpoint; credentials come from the AWS chain.
type clientFlags struct {
	endpoint  string
	region    string
	pathStyle bool
	profile   string
}

func (cf *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.endpoint, "endpoint", "", "S3 endpoint URL, for S3-compatible servers (default: AWS)")
	fs.StringVar(&cf.region, "region", "", "region (default: from the AWS chain; us-east-1 with --endpoint)")
	fs.BoolVar(&cf.pathStyle, "path-style", false, "path-style addressing (http://host/bucket/key), which most S3-compatible servers need")
	fs.StringVar(&cf.profile, "profile", "", "shared-config profile (default: $AWS_PROFILE or default)")
}

// client builds an S3 client from the standard AWS configuration chain.
func (cf *clientFlags) client(ctx context.Context) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if cf.region != "" {
		opts = append(opts, config.WithRegion(cf.region))
	}
	if cf.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cf.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if cf.endpoint == "" {
			return nil, usagef("no region: set AWS_REGION, a profile's region, or --region")
		}
		cfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if cf.endpoint != "" {
			o.BaseEndpoint = aws.String(cf.endpoint)
		}
		o.UsePathStyle = cf.pathStyle
	}), nil
}
