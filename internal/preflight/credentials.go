package preflight

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// errNoCredentials: the standard chain found no credentials at all.
var errNoCredentials = errors.New("no AWS credentials found (environment, shared files, SSO, container or instance role)")

// FindCredentials asks the client's credential chain for credentials once,
// before any S3 call, so that a missing or broken source is one problem
// rather than the same failure repeated by every probe. A chain that fell
// through to the instance role, and found none, found nothing at all; its
// metadata-service error is kept for errors.Is but not printed. It reports
// whether credentials were found, and the problem if not.
func FindCredentials(ctx context.Context, c *s3.Client) (Problem, bool) {
	creds := c.Options().Credentials
	if creds == nil {
		return Problem{}, true
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	_, err := creds.Retrieve(cctx)
	switch {
	case err == nil:
		return Problem{}, true
	case aws.IsCredentialsProvider(creds, (*ec2rolecreds.Provider)(nil)):
		return Problem{Check: "find credentials", Err: quietError{errNoCredentials, err},
			Hint: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or name them in Config.Credentials"}, false
	}
	return Problem{Check: "load credentials", Err: err,
		Hint: "check AWS_PROFILE, the shared config and credentials files, and the SSO session (aws sso login)"}, false
}

// quietError prints as msg and unwraps to both msg and the error it
// summarises.
type quietError struct{ msg, detail error }

func (e quietError) Error() string   { return e.msg.Error() }
func (e quietError) Unwrap() []error { return []error{e.msg, e.detail} }
