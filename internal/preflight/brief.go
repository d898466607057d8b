package preflight

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Brief is err's message with the AWS SDK's account of a refused call cut
// to what a person acts on: "S3 ListObjectsV2 answered HTTP 403
// SignatureDoesNotMatch: <the server's message>". The SDK's own form says
// "https response error" whatever the endpoint's scheme and carries the
// request and host ids, which only the provider's support asks for; they
// stay in the error value (errors.As finds the SDK's types). Any other
// error reads as it is.
func Brief(err error) string {
	s := err.Error()
	var op *smithy.OperationError
	var api smithy.APIError
	if !errors.As(err, &op) || !errors.As(err, &api) {
		return s
	}
	brief := fmt.Sprintf("S3 %s refused: %s", op.Operation(), api.ErrorCode())
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		brief = fmt.Sprintf("S3 %s answered HTTP %d %s", op.Operation(), re.HTTPStatusCode(), api.ErrorCode())
	}
	if m := api.ErrorMessage(); m != "" {
		brief += ": " + m
	}
	return strings.Replace(s, op.Error(), brief, 1)
}
