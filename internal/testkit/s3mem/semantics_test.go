package s3mem_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/minio/crc64nvme"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// backend is one S3 implementation the semantics run against.
type backend struct {
	name   string
	client *s3.Client
	bucket func(t *testing.T) string
	fake   bool
}

// backends are the Fake and the real server, so every check below holds the
// Fake to what the server does.
func backends(t *testing.T) []backend {
	fake := s3mem.New(s3mem.Options{PageSize: 2})
	srv := s3test.Start(t, s3test.Options{})
	return []backend{
		{name: "fake", client: fake.NewClient(s3mem.ClientOptions{}), bucket: func(*testing.T) string { return fake.Bucket() }, fake: true},
		{name: "versitygw", client: srv.Client(s3test.ClientOptions{}), bucket: func(t *testing.T) string { return srv.Bucket(t) }},
	}
}

const mib = 1 << 20

func data(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/251)
	}
	return b
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

func wantCode(t *testing.T, what string, err error, codes ...string) {
	t.Helper()
	for _, c := range codes {
		if code(err) == c {
			return
		}
	}
	t.Fatalf("%s: %v (code %q), want %v", what, err, code(err), codes)
}

// mpu opens an upload with CRC64NVME full-object checksums and uploads parts.
type mpu struct {
	t      *testing.T
	c      *s3.Client
	bucket string
	key    string
	id     string
	parts  []types.CompletedPart
	bytes  []byte
}

func newMPU(t *testing.T, c *s3.Client, bucket, key string) *mpu {
	t.Helper()
	out, err := c.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{
		Bucket: &bucket, Key: &key, ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject,
	})
	if err != nil {
		t.Fatalf("create upload: %v", err)
	}
	return &mpu{t: t, c: c, bucket: bucket, key: key, id: aws.ToString(out.UploadId)}
}

func (m *mpu) part(n int32, body []byte) {
	m.t.Helper()
	out, err := m.c.UploadPart(context.Background(), &s3.UploadPartInput{
		Bucket: &m.bucket, Key: &m.key, UploadId: &m.id, PartNumber: aws.Int32(n), Body: bytes.NewReader(body),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(crc64nvme.Checksum(body))),
	})
	if err != nil {
		m.t.Fatalf("upload part %d: %v", n, err)
	}
	m.parts = append(m.parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag, ChecksumCRC64NVME: out.ChecksumCRC64NVME})
	m.bytes = append(m.bytes, body...)
}

func (m *mpu) complete(edit func(*s3.CompleteMultipartUploadInput)) error {
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &m.bucket, Key: &m.key, UploadId: &m.id,
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: append([]types.CompletedPart(nil), m.parts...)},
		ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(crc64nvme.Checksum(m.bytes))),
		ChecksumType:      types.ChecksumTypeFullObject,
	}
	if edit != nil {
		edit(in)
	}
	_, err := m.c.CompleteMultipartUpload(context.Background(), in)
	return err
}

func (m *mpu) listParts() ([]types.Part, error) {
	var parts []types.Part
	p := s3.NewListPartsPaginator(m.c, &s3.ListPartsInput{Bucket: &m.bucket, Key: &m.key, UploadId: &m.id, MaxParts: aws.Int32(2)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			return nil, err
		}
		parts = append(parts, out.Parts...)
	}
	return parts, nil
}

func put(t *testing.T, c *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, c *s3.Client, in *s3.GetObjectInput) ([]byte, error) {
	t.Helper()
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// TestSemantics holds the Fake and the real server to the same S3 rules.
func TestSemantics(t *testing.T) {
	checks := []struct {
		name string
		fn   func(t *testing.T, b backend, bucket string)
	}{
		{"EntityTooSmall", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(1, 1000))
			m.part(2, data(2, 1000))
			wantCode(t, "complete with a small first part", m.complete(nil), "EntityTooSmall")
		}},
		{"InvalidPartOrder", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(1, 5*mib))
			m.part(2, data(2, 5*mib))
			m.part(3, data(3, 10))
			m.parts[0], m.parts[1] = m.parts[1], m.parts[0]
			wantCode(t, "complete out of order", m.complete(nil), "InvalidPartOrder")
		}},
		{"InvalidPart", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(1, 10))
			m.parts[0].ETag = aws.String(`"0123456789abcdef0123456789abcdef"`)
			wantCode(t, "complete with a wrong ETag", m.complete(nil), "InvalidPart")
			m.parts[0].ETag = nil
			m2 := newMPU(t, b.client, bucket, "k2")
			m2.part(1, data(1, 10))
			m2.parts[0].PartNumber = aws.Int32(3)
			wantCode(t, "complete with a part never uploaded", m2.complete(nil), "InvalidPart")
		}},
		{"BadDigest", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			_, err := b.client.UploadPart(context.Background(), &s3.UploadPartInput{
				Bucket: &bucket, Key: aws.String("k"), UploadId: &m.id, PartNumber: aws.Int32(1), Body: bytes.NewReader(data(1, 100)),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(12345)),
			})
			wantCode(t, "part with a wrong CRC64NVME", err, "BadDigest")
			_, err = b.client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: &bucket, Key: aws.String("p"), Body: bytes.NewReader(data(1, 100)),
				ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumCRC64NVME: aws.String(s3call.EncodeCRC(12345)),
			})
			wantCode(t, "put with a wrong CRC64NVME", err, "BadDigest")
			if _, err := b.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("p")}); code(err) != "NotFound" {
				t.Fatalf("HEAD after a refused put: %v", err)
			}
			m.part(1, data(1, 5*mib))
			m.part(2, data(2, 100))
			err = m.complete(func(in *s3.CompleteMultipartUploadInput) { in.ChecksumCRC64NVME = aws.String(s3call.EncodeCRC(7)) })
			if err == nil || status(err) != 400 {
				t.Fatalf("complete with a wrong full-object CRC64NVME: %v, want a 400", err)
			}
		}},
		{"IfNoneMatch", func(t *testing.T, b backend, bucket string) {
			put(t, b.client, bucket, "k", data(1, 10))
			_, err := b.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader(data(2, 10)), IfNoneMatch: aws.String("*")})
			wantCode(t, "conditional put over an object", err, "PreconditionFailed")
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(3, 10))
			err = m.complete(func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") })
			wantCode(t, "conditional complete over an object", err, "PreconditionFailed")
			if status(err) != 412 {
				t.Fatalf("status %d, want 412", status(err))
			}
			if _, err := m.listParts(); err != nil {
				t.Fatalf("the upload refused by its precondition is gone: %v", err)
			}
			got, err := get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k")})
			if err != nil || !bytes.Equal(got, data(1, 10)) {
				t.Fatalf("first object changed: %v", err)
			}
		}},
		{"NoSuchUploadAfterCompleteAndAbort", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(1, 10))
			if err := m.complete(nil); err != nil {
				t.Fatal(err)
			}
			_, err := m.listParts()
			wantCode(t, "list parts after complete", err, "NoSuchUpload")
			if err := m.complete(nil); b.fake || err != nil {
				// versitygw v1.8.0 answers 200 to a completion of an upload
				// it already completed (S3 may too, for a while); the Fake
				// takes the harder line, NoSuchUpload.
				wantCode(t, "complete again", err, "NoSuchUpload")
			}
			a := newMPU(t, b.client, bucket, "a")
			a.part(1, data(1, 10))
			if _, err := b.client.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String("a"), UploadId: &a.id}); err != nil {
				t.Fatal(err)
			}
			_, err = a.listParts()
			wantCode(t, "list parts after abort", err, "NoSuchUpload")
			wantCode(t, "complete after abort", a.complete(nil), "NoSuchUpload")
		}},
		{"CRC64NVME", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(1, 5*mib))
			m.part(2, data(2, 777))
			parts, err := m.listParts()
			if err != nil || len(parts) != 2 {
				t.Fatalf("list parts: %d, %v", len(parts), err)
			}
			for i, p := range parts {
				if aws.ToString(p.ChecksumCRC64NVME) != aws.ToString(m.parts[i].ChecksumCRC64NVME) {
					t.Fatalf("part %d lists CRC64NVME %q, uploaded %q", i+1, aws.ToString(p.ChecksumCRC64NVME), aws.ToString(m.parts[i].ChecksumCRC64NVME))
				}
			}
			if err := m.complete(func(in *s3.CompleteMultipartUploadInput) { in.MpuObjectSize = aws.Int64(int64(len(m.bytes))) }); err != nil {
				t.Fatal(err)
			}
			h, err := b.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			if want := s3call.EncodeCRC(crc64nvme.Checksum(m.bytes)); aws.ToString(h.ChecksumCRC64NVME) != want || h.ChecksumType != types.ChecksumTypeFullObject {
				t.Fatalf("HEAD gives CRC64NVME %q (%s), want %q FULL_OBJECT", aws.ToString(h.ChecksumCRC64NVME), h.ChecksumType, want)
			}
			if aws.ToInt64(h.ContentLength) != int64(len(m.bytes)) {
				t.Fatalf("HEAD size %d, want %d", aws.ToInt64(h.ContentLength), len(m.bytes))
			}
			hp, err := b.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k"), PartNumber: aws.Int32(2)})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToInt64(hp.ContentLength) != 777 || aws.ToInt32(hp.PartsCount) != 2 {
				t.Fatalf("HEAD of part 2: %d bytes, %d parts; want 777 bytes, 2 parts", aws.ToInt64(hp.ContentLength), aws.ToInt32(hp.PartsCount))
			}
		}},
		{"MultipartGetAcrossParts", func(t *testing.T, b backend, bucket string) {
			m := newMPU(t, b.client, bucket, "k")
			m.part(1, data(3, 5*mib))
			m.part(2, data(4, 777))
			if err := m.complete(nil); err != nil {
				t.Fatal(err)
			}
			got, err := get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k")})
			if err != nil || !bytes.Equal(got, m.bytes) {
				t.Fatalf("GET the whole object: %d bytes, %v; want %d bytes", len(got), err, len(m.bytes))
			}
			got, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", 5*mib-10, 5*mib+9))})
			if err != nil || !bytes.Equal(got, m.bytes[5*mib-10:5*mib+10]) {
				t.Fatalf("a range across the parts: %d bytes, %v", len(got), err)
			}
			got, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), PartNumber: aws.Int32(2)})
			if err != nil || !bytes.Equal(got, m.bytes[5*mib:]) {
				t.Fatalf("GET part 2: %d bytes, %v", len(got), err)
			}
		}},
		{"GetRangeAndIfMatch", func(t *testing.T, b backend, bucket string) {
			body := data(5, 100)
			put(t, b.client, bucket, "k", body)
			got, err := get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), Range: aws.String("bytes=10-19")})
			if err != nil || !bytes.Equal(got, body[10:20]) {
				t.Fatalf("range 10-19: %q, %v", got, err)
			}
			got, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), Range: aws.String("bytes=-5")})
			if err != nil || !bytes.Equal(got, body[95:]) {
				t.Fatalf("range -5: %q, %v", got, err)
			}
			_, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), IfMatch: aws.String(`"00000000000000000000000000000000"`)})
			wantCode(t, "GET If-Match another ETag", err, "PreconditionFailed")
			h, err := b.client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
			if err != nil {
				t.Fatal(err)
			}
			got, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("k"), IfMatch: h.ETag})
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("GET If-Match its ETag: %v", err)
			}
			_, err = get(t, b.client, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("missing")})
			wantCode(t, "GET a missing key", err, "NoSuchKey")
		}},
		{"Pagination", func(t *testing.T, b backend, bucket string) {
			var want []string
			for i := range 5 {
				k := fmt.Sprintf("p/%d", i)
				put(t, b.client, bucket, k, []byte{byte(i)})
				want = append(want, k)
			}
			var got []string
			pages := 0
			p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String("p/"), MaxKeys: aws.Int32(2)})
			for p.HasMorePages() {
				out, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, o := range out.Contents {
					got = append(got, aws.ToString(o.Key))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
				t.Fatalf("listed %v in %d pages, want %v in 3", got, pages, want)
			}
			var ups []string
			for i := range 5 {
				k := fmt.Sprintf("u/%d", i%3)
				m := newMPU(t, b.client, bucket, k)
				ups = append(ups, k+" "+m.id)
			}
			var listed []string
			up := s3.NewListMultipartUploadsPaginator(b.client, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: aws.String("u/"), MaxUploads: aws.Int32(2)})
			for up.HasMorePages() {
				out, err := up.NextPage(context.Background())
				if err != nil && !b.fake && code(err) == "InvalidArgument" {
					// versitygw v1.8.0 refuses the NextUploadIdMarker it gave
					// (a quirk listed in the package documentation).
					t.Logf("known server quirk: %v", err)
					listed = ups
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range out.Uploads {
					listed = append(listed, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
				}
			}
			sort.Strings(ups)
			sort.Strings(listed)
			if fmt.Sprint(listed) != fmt.Sprint(ups) {
				t.Fatalf("uploads listed %v, want %v", listed, ups)
			}
			m := newMPU(t, b.client, bucket, "parts")
			for n := int32(1); n <= 5; n++ {
				m.part(n, []byte{byte(n)})
			}
			parts, err := m.listParts()
			if err != nil || len(parts) != 5 {
				t.Fatalf("listed %d parts (%v), want 5", len(parts), err)
			}
		}},
		{"DeleteObjects", func(t *testing.T, b backend, bucket string) {
			put(t, b.client, bucket, "d/1", []byte("1"))
			put(t, b.client, bucket, "d/2", []byte("2"))
			put(t, b.client, bucket, "keep", []byte("3"))
			out, err := b.client.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{
				Objects: []types.ObjectIdentifier{{Key: aws.String("d/1")}, {Key: aws.String("d/2")}, {Key: aws.String("d/missing")}}, Quiet: aws.Bool(true),
			}})
			if err != nil || len(out.Errors) != 0 {
				t.Fatalf("delete objects: %v %+v", err, out)
			}
			if got := s3test.Keys(t, b.client, bucket, ""); fmt.Sprint(got) != "[keep]" {
				t.Fatalf("left %v, want [keep]", got)
			}
		}},
		{"NoLifecycleRules", func(t *testing.T, b backend, bucket string) {
			_, err := b.client.GetBucketLifecycleConfiguration(context.Background(), &s3.GetBucketLifecycleConfigurationInput{Bucket: &bucket})
			wantCode(t, "lifecycle of a bucket without rules", err, "NoSuchLifecycleConfiguration", "NotImplemented")
		}},
		{"DateHeader", func(t *testing.T, b backend, bucket string) {
			out, err := b.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket})
			if err != nil {
				t.Fatal(err)
			}
			st, ok := awsmiddleware.GetServerTime(out.ResultMetadata)
			if d := time.Since(st); !ok || d < -time.Minute || d > time.Minute {
				t.Fatalf("server time %v (%v), local %v", st, ok, time.Now())
			}
		}},
		{"ETagIsMD5", func(t *testing.T, b backend, bucket string) {
			body := data(9, 1234)
			out, err := b.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
			sum := md5.Sum(body)
			if want := `"` + hex.EncodeToString(sum[:]) + `"`; aws.ToString(out.ETag) != want {
				t.Fatalf("ETag %s, want %s", aws.ToString(out.ETag), want)
			}
		}},
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) { c.fn(t, b, b.bucket(t)) })
			}
		})
	}
}
