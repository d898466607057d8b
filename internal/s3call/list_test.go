package s3call_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// server is an S3 to list from.
type server struct {
	api    s3fault.API
	bucket string
}

func servers(t *testing.T) map[string]func() server {
	return map[string]func() server{
		// Pages of two entries: every listing below spans pages.
		"Fake": func() server {
			fake := s3mem.New(s3mem.Options{PageSize: 2})
			return server{api: fake.NewClient(s3mem.ClientOptions{}), bucket: fake.Bucket()}
		},
		"Versitygw": func() server {
			srv := s3test.Start(t, s3test.Options{})
			return server{api: srv.Client(s3test.ClientOptions{}), bucket: srv.Bucket(t)}
		},
	}
}

// TestListings: each listing sees every entry once, in order, and a page
// that fails once with a transient error is asked for again from the same
// marker.
func TestListings(t *testing.T) {
	ctx := context.Background()
	p := s3call.Policy{Attempts: 2, Retry: s3call.RetryTransient}
	for name, start := range servers(t) {
		t.Run(name, func(t *testing.T) {
			s := start()
			f := s3fault.New(s.api)
			up, err := s.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String("out/f")})
			if err != nil {
				t.Fatal(err)
			}
			for n := int32(1); n <= 5; n++ {
				if _, err := s.api.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(s.bucket), Key: aws.String("out/f"), UploadId: up.UploadId, PartNumber: aws.Int32(n), Body: nil}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 5 {
				k := fmt.Sprintf("st/%d", i)
				if _, err := s.api.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}); err != nil {
					t.Fatal(err)
				}
			}
			f.On(s3fault.ListParts, s3fault.Nth(2, s3fault.SlowDown))
			f.On(s3fault.ListObjectsV2, s3fault.Nth(2, s3fault.SlowDown))
			f.On(s3fault.ListMultipartUploads, s3fault.Nth(2, s3fault.SlowDown))

			var parts []int32
			err = s3call.ListParts(ctx, f, p, &s3.ListPartsInput{Bucket: aws.String(s.bucket), Key: aws.String("out/f"), UploadId: up.UploadId},
				func(out *s3.ListPartsOutput) (bool, error) {
					for _, pt := range out.Parts {
						parts = append(parts, aws.ToInt32(pt.PartNumber))
					}
					return true, nil
				})
			if err != nil || fmt.Sprint(parts) != "[1 2 3 4 5]" {
				t.Fatalf("parts %v, err %v", parts, err)
			}
			var keys []string
			err = s3call.ListObjects(ctx, f, p, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String("st/")},
				func(out *s3.ListObjectsV2Output) (bool, error) {
					for _, o := range out.Contents {
						keys = append(keys, aws.ToString(o.Key))
					}
					return true, nil
				})
			if err != nil || fmt.Sprint(keys) != "[st/0 st/1 st/2 st/3 st/4]" {
				t.Fatalf("objects %v, err %v", keys, err)
			}
			// From a key marker on, without a Prefix, as the sweep lists.
			var ups []string
			err = s3call.ListUploads(ctx, f, p, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.bucket), KeyMarker: aws.String("st/")},
				func(out *s3.ListMultipartUploadsOutput) (bool, error) {
					for _, u := range out.Uploads {
						ups = append(ups, aws.ToString(u.Key))
					}
					return true, nil
				})
			if err != nil || fmt.Sprint(ups) != "[st/0 st/1 st/2 st/3 st/4]" {
				t.Fatalf("uploads %v, err %v", ups, err)
			}
			// The fake's pages of two make every listing reach its faulty
			// second page; the real server's pages of 1,000 do not.
			if want := map[string]int{"Fake": 3, "Versitygw": 0}[name]; len(f.Faults()) != want {
				t.Fatalf("%d faults injected, want %d: %v", len(f.Faults()), want, f.Faults())
			}
		})
	}
}

// endless answers every listing with a truncated page that names no marker.
type endless struct{ n int }

func (e *endless) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	e.n++
	return &s3.ListMultipartUploadsOutput{IsTruncated: aws.Bool(true)}, nil
}

// TestListUploadsEndsWithoutMarker: a truncated page with no marker to go on
// from ends the listing (asking again would start over, for ever).
func TestListUploadsEndsWithoutMarker(t *testing.T) {
	e := &endless{}
	err := s3call.ListUploads(context.Background(), e, s3call.Policy{}, &s3.ListMultipartUploadsInput{Bucket: aws.String("b")},
		func(*s3.ListMultipartUploadsOutput) (bool, error) { return true, nil })
	if err != nil || e.n != 1 {
		t.Fatalf("%d listings, err %v", e.n, err)
	}
}
