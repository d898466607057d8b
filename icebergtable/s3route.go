package icebergtable

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/utils"

	"github.com/s3once/s3once/sink"
)

// WithS3 returns ctx carrying the AWS configuration of the sink's
// settings (sink.Config.AWSConfig): iceberg-go's S3 file IO then reaches
// the bucket with the sink's credentials, region and retry attempts, and
// sends the sink's request settings (expected bucket owner, SSE-KMS or
// SSE-C, object settings) with the table's metadata writes too, so a
// bucket whose policy requires them takes those writes. Pass it to Open;
// the Table keeps the configuration for Commit. The endpoint and
// path-style addressing reach the file IO as catalog properties:
// Config.LoadCatalog sets them from the sink's Connection.
func WithS3(ctx context.Context, cfg sink.Config) (context.Context, error) {
	ac, err := cfg.AWSConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3once iceberg: the sink's S3 settings: %w", err)
	}
	return utils.WithAwsConfig(ctx, &ac), nil
}

// withAWS puts the table's AWS configuration in ctx unless ctx has one.
func (t *Table) withAWS(ctx context.Context) context.Context {
	if t.aws == nil || utils.GetAwsConfig(ctx) != nil {
		return ctx
	}
	return utils.WithAwsConfig(ctx, t.aws)
}
