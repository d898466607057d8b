// Package runfolder reads what runs left in an output folder, for the
// programs that report on a run (cmd/s3once-run's progress line and
// summary, the tests of the README's program): the s3once files a listing
// finds there, and the partition manifests that list each complete
// partition's files (output version 2). Nothing else under the folder
// counts as a file: not its settings marker, its manifests or completion
// markers, nor an object of another shape.
package runfolder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
)

// Client is what the readers need of an S3 client; *s3.Client has it.
type Client interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// File is an s3once file a listing found.
type File struct {
	Key  string
	Size int64
}

// Files lists the s3once files under the output folder prefix (keys of
// an s3once file's shape, ownkeys.IsFileName), in key order.
func Files(ctx context.Context, c Client, bucket, prefix string) ([]File, error) {
	var files []File
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(ownkeys.Folder(prefix))})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, ownkeys.Folder(prefix), err)
		}
		for _, o := range out.Contents {
			if k := aws.ToString(o.Key); ownkeys.IsFileName(prefix, k) {
				files = append(files, File{Key: k, Size: aws.ToInt64(o.Size)})
			}
		}
	}
	return files, nil
}

// Partition names one partition of an output folder: a destination ("" for
// none) and a window, as FileResult names them.
type Partition struct {
	Destination, Window string
}

// ErrNoManifest is wrapped by Manifests' error for a partition whose
// manifest does not exist (yet).
var ErrNoManifest = errors.New("the partition has no manifest")

// Manifests reads the manifests of the given partitions (each once) and
// returns the files they list, in key order.
func Manifests(ctx context.Context, c Client, bucket, prefix string, parts []Partition) ([]manifest.Entry, error) {
	var all []manifest.Entry
	seen := map[Partition]bool{}
	for _, p := range parts {
		if seen[p] {
			continue
		}
		seen[p] = true
		key := ownkeys.ManifestKey(prefix, p.Destination, p.Window)
		entries, err := read(ctx, c, bucket, key)
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
	}
	slices.SortFunc(all, func(a, b manifest.Entry) int { return strings.Compare(a.Key, b.Key) })
	return all, nil
}

// read reads and decodes the manifest at key.
func read(ctx context.Context, c Client, bucket, key string) ([]manifest.Entry, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		if s3call.APICode(err) == "NoSuchKey" {
			return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, ErrNoManifest)
		}
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, manifest.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	entries, err := manifest.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", bucket, key, err)
	}
	return entries, nil
}
