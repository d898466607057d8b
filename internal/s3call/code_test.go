package s3call_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// TestCodeOf holds the one mapping to what servers answer: by error code
// first, then by HTTP status, then by transport error.
func TestCodeOf(t *testing.T) {
	api := func(status int, code string) error {
		return s3fault.APIError(s3fault.PutObject, status, code, "")
	}
	cases := []struct {
		err  error
		want s3call.Code
	}{
		{nil, s3call.OK},
		{errors.New("something else"), s3call.Unknown},
		{context.Canceled, s3call.Canceled},
		{fmt.Errorf("wrapped: %w", context.Canceled), s3call.Canceled},
		{context.DeadlineExceeded, s3call.Transient},
		{io.ErrUnexpectedEOF, s3call.Transient},
		{syscall.ECONNRESET, s3call.Transient},
		{api(404, "NoSuchKey"), s3call.NotFound},
		{api(404, "NotFound"), s3call.NotFound},
		{api(404, ""), s3call.NotFound},
		{api(404, "NoSuchLifecycleConfiguration"), s3call.NotFound},
		{api(404, "NoSuchUpload"), s3call.NoSuchUpload},
		{api(404, "NoSuchBucket"), s3call.NoSuchBucket},
		{api(400, "InvalidBucketName"), s3call.InvalidBucketName},
		{api(412, "PreconditionFailed"), s3call.PreconditionFailed},
		{api(412, ""), s3call.PreconditionFailed},
		{api(409, "ConditionalRequestConflict"), s3call.Conflict},
		{api(409, "OperationAborted"), s3call.Conflict},
		{api(409, "SomethingNew"), s3call.Conflict},
		{api(400, "InvalidPart"), s3call.InvalidPart},
		{api(400, "InvalidPartOrder"), s3call.InvalidPart},
		{api(400, "BadDigest"), s3call.InvalidPart},
		{api(400, "EntityTooSmall"), s3call.EntityTooSmall},
		{api(403, "AccessDenied"), s3call.AccessDenied},
		{api(403, ""), s3call.AccessDenied},
		{api(403, "InvalidAccessKeyId"), s3call.Unauthenticated},
		{api(403, "XAdminUserNotFound"), s3call.Unauthenticated},
		{api(301, "PermanentRedirect"), s3call.WrongRegion},
		{api(400, "AuthorizationHeaderMalformed"), s3call.WrongRegion},
		{api(501, "NotImplemented"), s3call.NotImplemented},
		{api(501, ""), s3call.NotImplemented},
		{api(503, "SlowDown"), s3call.Transient},
		{api(500, "InternalError"), s3call.Transient},
		{api(502, "BadGateway"), s3call.Transient},
		{api(400, "RequestTimeout"), s3call.Transient},
		{api(429, "TooManyRequests"), s3call.Transient},
		{api(http.StatusRequestTimeout, ""), s3call.Transient},
		{api(400, "InvalidArgument"), s3call.Unknown},
		{errors.New("operation error S3: PutObject, get identity: get credentials: failed"), s3call.Unauthenticated},
	}
	for _, k := range s3fault.Kinds {
		cases = append(cases, struct {
			err  error
			want s3call.Code
		}{s3fault.FaultError(s3fault.CompleteMultipartUpload, k), s3call.Transient})
	}
	for _, c := range cases {
		if got := s3call.CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestPredicates: the predicates the packages branch on, built on CodeOf.
// TestIsRetryable: transport failures, throttling and 5xx are worth asking
// again; a cancelled context and the refusals are not.
func TestIsRetryable(t *testing.T) {
	api := func(status int, code string) error {
		return s3fault.APIError(s3fault.PutObject, status, code, "")
	}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("wrapped: %w", context.Canceled), false},
		{context.DeadlineExceeded, true},
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{syscall.ECONNRESET, true},
		{syscall.ECONNREFUSED, true},
		{errors.New("something else"), false},
		{api(503, "SlowDown"), true},
		{api(500, "InternalError"), true},
		{api(502, "BadGateway"), true},
		{api(400, "RequestTimeout"), true},
		{api(429, "TooManyRequests"), true},
		{api(501, "NotImplemented"), false},
		{api(404, "NoSuchUpload"), false},
		{api(412, "PreconditionFailed"), false},
		{api(409, "ConditionalRequestConflict"), false},
		{api(400, "BadDigest"), false},
		{api(403, "AccessDenied"), false},
		{api(http.StatusRequestTimeout, ""), true},
	}
	for _, k := range s3fault.Kinds {
		cases = append(cases, struct {
			err  error
			want bool
		}{s3fault.FaultError(s3fault.CompleteMultipartUpload, k), true})
	}
	for _, c := range cases {
		if got := s3call.IsRetryable(c.err); got != c.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	api := func(status int, code string) error {
		return s3fault.APIError(s3fault.PutObject, status, code, "")
	}
	if !s3call.IsNotFound(api(404, "NoSuchUpload")) || !s3call.IsNotFound(api(404, "NoSuchBucket")) || s3call.IsNotFound(api(403, "")) {
		t.Error("IsNotFound: an upload or a bucket that is gone is absent too; a 403 is not")
	}
	if !s3call.IsRetryable(api(409, "OperationAborted")) || s3call.IsRetryable(api(409, "ConditionalRequestConflict")) {
		t.Error("IsRetryable: OperationAborted is the one 409 worth asking again")
	}
	if s3call.IsRetryable(api(501, "NotImplemented")) || s3call.IsRetryable(context.Canceled) || !s3call.IsRetryable(context.DeadlineExceeded) {
		t.Error("IsRetryable: 501 and a cancelled context are terminal, a deadline is not")
	}
	if !s3call.IsChecksumRejected(s3fault.APIError(s3fault.PutObject, 400, "InvalidArgument", "x-amz-checksum-crc64nvme is not supported")) ||
		s3call.IsChecksumRejected(api(400, "InvalidArgument")) {
		t.Error("IsChecksumRejected: only a refusal that names the checksum")
	}
	if !s3call.IsUnreachable(s3fault.FaultError(s3fault.PutObject, s3fault.BeforeSend)) || s3call.IsUnreachable(s3fault.FaultError(s3fault.PutObject, s3fault.LostResponse)) {
		t.Error("IsUnreachable: a refused dial, not a reset connection")
	}
}

func TestCRCCodec(t *testing.T) {
	for _, c := range []uint64{0, 1, 0x9a6c9329ac4bc9b5, ^uint64(0)} {
		got, ok := s3call.DecodeCRC(s3call.EncodeCRC(c))
		if !ok || got != c {
			t.Errorf("round trip of %016x: %016x, %v", c, got, ok)
		}
	}
	if s3call.EncodeCRC(0x0102030405060708) != "AQIDBAUGBwg=" {
		t.Errorf("EncodeCRC is not base64 of the big-endian bytes: %s", s3call.EncodeCRC(0x0102030405060708))
	}
	for _, s := range []string{"", "not base64!", "AQID"} {
		if _, ok := s3call.DecodeCRC(s); ok {
			t.Errorf("DecodeCRC(%q) accepted", s)
		}
	}
}

func TestStagingPrefix(t *testing.T) {
	if s3call.StagingPrefix("") != s3call.DefaultStagingPrefix || s3call.StagingPrefix("st/") != "st/" {
		t.Error("StagingPrefix applies the default only to an empty prefix")
	}
}

func TestCompleteInput(t *testing.T) {
	c := s3call.Completion{Bucket: "b", Key: "k", UploadID: "u", Size: 10, CRC: 7, Checksums: true, IfNoneMatch: true,
		Parts: []s3call.CompletedPart{{Number: 1, ETag: `"e1"`, CRC: 3}, {Number: 2, ETag: "e2", CRC: 4}}}
	in := s3call.CompleteInput(c)
	if *in.IfNoneMatch != "*" || *in.MpuObjectSize != 10 || *in.ChecksumCRC64NVME != s3call.EncodeCRC(7) || in.ChecksumType != "FULL_OBJECT" {
		t.Fatalf("conditional completion with checksums: %+v", in)
	}
	if p := in.MultipartUpload.Parts; len(p) != 2 || *p[1].PartNumber != 2 || *p[1].ETag != "e2" || *p[1].ChecksumCRC64NVME != s3call.EncodeCRC(4) {
		t.Fatalf("parts: %+v", p)
	}
	// An empty object carries no object checksum (MinIO refuses a zero
	// one); without checksums no part carries one; unconditional has no
	// If-None-Match.
	c.Size, c.CRC = 0, 0
	if in := s3call.CompleteInput(c); in.ChecksumCRC64NVME != nil || in.ChecksumType != "" {
		t.Fatalf("empty object: %+v", in)
	}
	c.Checksums, c.IfNoneMatch = false, false
	if in := s3call.CompleteInput(c); in.IfNoneMatch != nil || in.MultipartUpload.Parts[0].ChecksumCRC64NVME != nil {
		t.Fatalf("unconditional, no checksums: %+v", in)
	}
}
