package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

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
	fs.StringVar(&cf.endpoint, "s3-endpoint", "", "S3 endpoint URL, for S3-compatible servers (default: AWS)")
	fs.StringVar(&cf.endpoint, "endpoint", "", "the same as --s3-endpoint")
	fs.StringVar(&cf.region, "region", "", "region (default: from the AWS chain; us-east-1 with --s3-endpoint)")
	fs.BoolVar(&cf.pathStyle, "path-style", false, "path-style addressing (http://host/bucket/key), which most S3-compatible servers need")
	fs.StringVar(&cf.profile, "profile", "", "shared-config profile (default: $AWS_PROFILE or default)")
}

// registerOwner adds --expected-bucket-owner.
func (cf *clientFlags) registerOwner(fs *flag.FlagSet) {
	fs.StringVar(&cf.owner, "expected-bucket-owner", "", "account ID that must own the bucket (S3 refuses every call otherwise)")
}

// args gives the flags again, as a command line that reaches the same
// server; empty for AWS with the default chain.
func (cf *clientFlags) args() string {
	var b strings.Builder
	if cf.endpoint != "" {
		fmt.Fprintf(&b, " --s3-endpoint %s", shellQuote(cf.endpoint))
	}
	if cf.pathStyle {
		b.WriteString(" --path-style")
	}
	if cf.region != "" {
		fmt.Fprintf(&b, " --region %s", shellQuote(cf.region))
	}
	if cf.profile != "" {
		fmt.Fprintf(&b, " --profile %s", shellQuote(cf.profile))
	}
	if cf.owner != "" {
		fmt.Fprintf(&b, " --expected-bucket-owner %s", shellQuote(cf.owner))
	}
	return b.String()
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
