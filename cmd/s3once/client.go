package main

import (
	"context"
	"errors"
	"flag"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/s3req"
)

// clientFlags select the S3 endpoint; credentials come from the AWS chain.
type clientFlags struct {
	endpoint  string
	region    string
	pathStyle bool
	profile   string
	// owner is --expected-bucket-owner, for the commands that take it.
	owner string
}

func (cf *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.endpoint, "endpoint", "", "S3 endpoint URL, for S3-compatible servers (default: AWS)")
	fs.StringVar(&cf.region, "region", "", "region (default: from the AWS chain; us-east-1 with --endpoint)")
	fs.BoolVar(&cf.pathStyle, "path-style", false, "path-style addressing (http://host/bucket/key), which most S3-compatible servers need")
	fs.StringVar(&cf.profile, "profile", "", "shared-config profile (default: $AWS_PROFILE or default)")
}

// registerOwner adds --expected-bucket-owner.
func (cf *clientFlags) registerOwner(fs *flag.FlagSet) {
	fs.StringVar(&cf.owner, "expected-bucket-owner", "", "account ID that must own the bucket (S3 refuses every call otherwise)")
}

// client builds an S3 client from the standard AWS configuration chain;
// with an expected bucket owner, every request names it.
func (cf *clientFlags) client(ctx context.Context) (*s3.Client, error) {
	c, err := s3call.NewClient(ctx, s3call.ClientOptions{
		Endpoint: cf.endpoint, Region: cf.region, RequireRegion: true, PathStyle: cf.pathStyle, Profile: cf.profile,
	})
	if errors.Is(err, s3call.ErrNoRegion) {
		return nil, usagef("no region: set AWS_REGION, a profile's region, or --region")
	}
	if err != nil || cf.owner == "" {
		return c, err
	}
	req := s3req.Settings{ExpectedBucketOwner: cf.owner}
	if err := req.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return s3.New(c.Options(), req.Apply), nil
}
