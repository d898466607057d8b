package preflight_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3once/s3once/internal/preflight"
)

// A preflight problem reads without the SDK's request and host ids and
// without its "https response error" (wrong for an http endpoint); the ids
// stay in the error value, and any other error reads as it is.
func TestBrief(t *testing.T) {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 403}}
	sdk := &smithy.OperationError{ServiceID: "S3", OperationName: "ListObjectsV2", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: "SignatureDoesNotMatch", Message: "check your key"}},
		RequestID:     "REQ123",
	}}
	err := fmt.Errorf("list the output prefix: %w", sdk)
	if full := err.Error(); !strings.Contains(full, "https response error") || !strings.Contains(full, "REQ123") {
		t.Fatalf("the SDK's own form changed (%q): the checks below would test nothing", full)
	}
	got := preflight.Brief(err)
	if want := "list the output prefix: S3 ListObjectsV2 answered HTTP 403 SignatureDoesNotMatch: check your key"; got != want {
		t.Errorf("Brief = %q, want %q", got, want)
	}
	for _, gone := range []string{"REQ123", "https response error"} {
		if strings.Contains(got, gone) {
			t.Errorf("Brief keeps %q: %q", gone, got)
		}
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.RequestID != "REQ123" {
		t.Error("the error value lost the request id")
	}
	p := preflight.Problem{Check: "authenticate", Err: err, Hint: "check the keys"}
	if s := p.String(); !strings.Contains(s, "answered HTTP 403") || strings.Contains(s, "REQ123") {
		t.Errorf("Problem.String = %q", s)
	}
	plain := errors.New("dial tcp 127.0.0.1:9: connection refused")
	if got := preflight.Brief(plain); got != plain.Error() {
		t.Errorf("preflight.Brief(%q) = %q", plain, got)
	}
}
