package preflight_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/preflight"
)

// FindCredentials asks the chain once: credentials found, or none asked
// for, are no problem; a source that fails is one problem carrying its
// error and a hint.
func TestFindCredentials(t *testing.T) {
	broken := errors.New("the SSO session has expired")
	for _, tc := range []struct {
		name  string
		creds aws.CredentialsProvider
		ok    bool
	}{
		{"static", credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), true},
		{"none", nil, true},
		{"broken", aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return aws.Credentials{}, broken }), false},
	} {
		c := s3.New(s3.Options{Region: "us-east-1", Credentials: tc.creds})
		pr, ok := preflight.FindCredentials(context.Background(), c)
		if ok != tc.ok {
			t.Errorf("%s: found %v, want %v (%+v)", tc.name, ok, tc.ok, pr)
			continue
		}
		if !ok && (pr.Check != "load credentials" || !errors.Is(pr.Err, broken) || pr.Hint == "") {
			t.Errorf("%s: the problem %+v does not carry the source's failure and a hint", tc.name, pr)
		}
	}
}
