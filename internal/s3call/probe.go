package s3call

// Probes: the single calls of a preflight (sink.Preflight), so that the
// sink reaches S3 only through this package and the committer. Each probe
// is one attempt under a Policy: bounded by its call timeout, its error
// kept as the server gave it (CodeOf's table reads it), and
// never retried after a refusal, so that a misconfiguration fails at once.
// Only the SDK client's own retries of transport failures and 5xx run
// inside the attempt, and a throttled probe waits out its lane's backoff
// within the client's ThrottleBudget and the caller's context, as any call
// under a Policy does.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"
)

// ProbeAPI is what the probes call; *s3.Client has it.
type ProbeAPI interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, opts ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

var _ ProbeAPI = (*s3.Client)(nil)

// BucketSettingsAPI is what reading a bucket's versioning and Object Lock
// needs beyond ProbeAPI; *s3.Client has it. A ProbeAPI without it cannot
// read them (Probes.ReadsBucketSettings).
type BucketSettingsAPI interface {
	GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, opts ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
	GetObjectLockConfiguration(ctx context.Context, in *s3.GetObjectLockConfigurationInput, opts ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, opts ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
}

var _ BucketSettingsAPI = (*s3.Client)(nil)

// ErrNoBucketSettings: the probes' client cannot read a bucket's settings.
var ErrNoBucketSettings = errors.New("the S3 client cannot read bucket settings")

// maxProbeRead bounds what a probe reads of an object.
const maxProbeRead = 1 << 20

// Probes makes single calls on one bucket for a preflight.
type Probes struct {
	api    ProbeAPI
	bucket string
	policy Policy
}

// NewProbes returns probes of bucket over api, each attempt bounded by
// callTimeout (BaseCallTimeout when zero or negative).
func NewProbes(api ProbeAPI, bucket string, callTimeout time.Duration) *Probes {
	if callTimeout <= 0 {
		callTimeout = BaseCallTimeout
	}
	return &Probes{api: api, bucket: bucket, policy: Policy{CallTimeout: callTimeout, Attempts: 1}}
}

// once makes one call under the probes' Policy.
func once[T any](ctx context.Context, p *Probes, fn func(context.Context) (T, error)) (T, error) {
	return Do(ctx, p.policy, "", fn)
}

// List lists at most one key under prefix.
func (p *Probes) List(ctx context.Context, prefix string) error {
	_, err := once(ctx, p, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
		return p.api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(p.bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1)})
	})
	return err
}

// CreateUpload starts a multipart upload at key, of full-object CRC64NVME
// checksums when checksums is set, and returns its ID.
func (p *Probes) CreateUpload(ctx context.Context, key string, checksums bool) (string, error) {
	out, err := once(ctx, p, func(ctx context.Context) (*s3.CreateMultipartUploadOutput, error) {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String(p.bucket), Key: aws.String(key)}
		if checksums {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
			in.ChecksumType = types.ChecksumTypeFullObject
		}
		return p.api.CreateMultipartUpload(ctx, in)
	})
	if err != nil {
		return "", err
	}
	id := aws.ToString(out.UploadId)
	if id == "" {
		return "", errors.New("the server returned an empty upload ID")
	}
	return id, nil
}

// UploadPart uploads part n of upload id at key and returns its ETag.
func (p *Probes) UploadPart(ctx context.Context, key, id string, n int32, body []byte, checksums bool) (string, error) {
	out, err := once(ctx, p, func(ctx context.Context) (*s3.UploadPartOutput, error) {
		in := &s3.UploadPartInput{
			Bucket: aws.String(p.bucket), Key: aws.String(key), UploadId: aws.String(id),
			PartNumber: aws.Int32(n), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		}
		if checksums {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
			in.ChecksumCRC64NVME = aws.String(EncodeCRC(crc64nvme.Checksum(body)))
		}
		return p.api.UploadPart(ctx, in)
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// ListParts returns the ETags of the first page of upload id's parts.
func (p *Probes) ListParts(ctx context.Context, key, id string) ([]string, error) {
	out, err := once(ctx, p, func(ctx context.Context) (*s3.ListPartsOutput, error) {
		return p.api.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(p.bucket), Key: aws.String(key), UploadId: aws.String(id)})
	})
	if err != nil {
		return nil, err
	}
	etags := make([]string, len(out.Parts))
	for i, part := range out.Parts {
		etags[i] = aws.ToString(part.ETag)
	}
	return etags, nil
}

// Abort aborts upload id at key.
func (p *Probes) Abort(ctx context.Context, key, id string) error {
	_, err := once(ctx, p, func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
		return p.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(p.bucket), Key: aws.String(key), UploadId: aws.String(id)})
	})
	return err
}

// Complete completes an upload as c describes it.
func (p *Probes) Complete(ctx context.Context, c Completion) error {
	c.Bucket = p.bucket
	_, err := once(ctx, p, func(ctx context.Context) (*s3.CompleteMultipartUploadOutput, error) {
		return p.api.CompleteMultipartUpload(ctx, CompleteInput(c))
	})
	return err
}

// Head returns the size of the object at key (its checksums asked for, as
// a commit's look at the key asks).
func (p *Probes) Head(ctx context.Context, key string) (int64, error) {
	out, err := once(ctx, p, func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return p.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	})
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Read reads the object at key whole, within the one attempt; an object of
// more than 1 MiB is an error.
func (p *Probes) Read(ctx context.Context, key string) ([]byte, error) {
	return once(ctx, p, func(ctx context.Context) ([]byte, error) {
		out, err := p.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(io.LimitReader(out.Body, maxProbeRead+1))
		switch {
		case err != nil:
			return nil, fmt.Errorf("read s3://%s/%s: %w", p.bucket, key, err)
		case len(b) > maxProbeRead:
			return nil, fmt.Errorf("s3://%s/%s holds more than %d bytes", p.bucket, key, maxProbeRead)
		}
		return b, nil
	})
}

// Put writes body at key: with its CRC64NVME when checksums is set, and
// with the server-side encryption sse when not empty.
func (p *Probes) Put(ctx context.Context, key string, body []byte, checksums bool, sse string) error {
	_, err := once(ctx, p, func(ctx context.Context) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}
		if checksums {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc64nvme
			in.ChecksumCRC64NVME = aws.String(EncodeCRC(crc64nvme.Checksum(body)))
		}
		if sse != "" {
			in.ServerSideEncryption = types.ServerSideEncryption(sse)
		}
		return p.api.PutObject(ctx, in)
	})
	return err
}

// Delete deletes the object at key.
func (p *Probes) Delete(ctx context.Context, key string) error {
	_, err := once(ctx, p, func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
		return p.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(key)})
	})
	return err
}

// DeleteBatch deletes keys (at most 1,000) with one DeleteObjects; a key
// the server did not delete is an error that names the first such.
func (p *Probes) DeleteBatch(ctx context.Context, keys []string) error {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := once(ctx, p, func(ctx context.Context) (*s3.DeleteObjectsOutput, error) {
		return p.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(p.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	})
	if err == nil && len(out.Errors) > 0 {
		e := out.Errors[0]
		err = fmt.Errorf("%d of %d keys not deleted, first %s: %s %s", len(out.Errors), len(ids), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return err
}

// ReadsBucketSettings reports whether the probes' client can read the
// bucket's versioning and Object Lock.
func (p *Probes) ReadsBucketSettings() bool {
	_, ok := p.api.(BucketSettingsAPI)
	return ok
}

func (p *Probes) settingsAPI() (BucketSettingsAPI, error) {
	api, ok := p.api.(BucketSettingsAPI)
	if !ok {
		return nil, ErrNoBucketSettings
	}
	return api, nil
}

// Versioning returns the bucket's versioning status: "" (never enabled),
// Enabled or Suspended.
func (p *Probes) Versioning(ctx context.Context) (types.BucketVersioningStatus, error) {
	api, err := p.settingsAPI()
	if err != nil {
		return "", err
	}
	out, err := once(ctx, p, func(ctx context.Context) (*s3.GetBucketVersioningOutput, error) {
		return api.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(p.bucket)})
	})
	if err != nil {
		return "", err
	}
	return out.Status, nil
}

// DefaultRetention describes the bucket's Object Lock default retention
// ("COMPLIANCE mode, 0 days 1 years"), or is "" where it has none.
func (p *Probes) DefaultRetention(ctx context.Context) (string, error) {
	api, err := p.settingsAPI()
	if err != nil {
		return "", err
	}
	out, err := once(ctx, p, func(ctx context.Context) (*s3.GetObjectLockConfigurationOutput, error) {
		return api.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(p.bucket)})
	})
	if err != nil {
		return "", err
	}
	ol := out.ObjectLockConfiguration
	if ol == nil || ol.ObjectLockEnabled != types.ObjectLockEnabledEnabled || ol.Rule == nil || ol.Rule.DefaultRetention == nil {
		return "", nil
	}
	d := ol.Rule.DefaultRetention
	return fmt.Sprintf("%s mode, %d days %d years", d.Mode, aws.ToInt32(d.Days), aws.ToInt32(d.Years)), nil
}

// ListVersions lists at most one object version under prefix.
func (p *Probes) ListVersions(ctx context.Context, prefix string) error {
	api, err := p.settingsAPI()
	if err != nil {
		return err
	}
	_, err = once(ctx, p, func(ctx context.Context) (*s3.ListObjectVersionsOutput, error) {
		return api.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(p.bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1)})
	})
	return err
}
