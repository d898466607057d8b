package s3test

import (
	"context"
	"io"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/ownkeys"
)

// Getter reads objects; *s3.Client is one.
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Reader is what the listing helpers need of a client; *s3.Client has it.
type Reader interface {
	Getter
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

// Keys lists every key under prefix, sorted.
func Keys(t testing.TB, c Reader, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys
}

// Object reads one object whole.
func Object(t testing.TB, c Getter, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read s3://%s/%s: %v", bucket, key, err)
	}
	return b
}

// Objects reads every object under prefix, by key: the output's files and
// completion markers, but not the folders' settings markers nor the
// partitions' manifests
// (<prefix>/_s3once_settings), which describe the files and are no output;
// Keys lists those, and Object reads one.
func Objects(t testing.TB, c Reader, bucket, prefix string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, k := range Keys(t, c, bucket, prefix) {
		if ownkeys.IsSettingsAnywhere(k) || ownkeys.IsManifestAnywhere(k) {
			continue
		}
		m[k] = Object(t, c, bucket, k)
	}
	return m
}

// Uploads lists the bucket's multipart uploads in progress, as "key uploadID".
func Uploads(t testing.TB, c Reader, bucket string) []string {
	t.Helper()
	var ups []string
	p := s3.NewListMultipartUploadsPaginator(c, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list uploads of %s: %v", bucket, err)
		}
		for _, u := range out.Uploads {
			ups = append(ups, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
		}
	}
	return ups
}
