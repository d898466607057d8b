package s3test

import (
	"path/filepath"
	"testing"
)

// NoCredentials empties the AWS SDK's standard credential chain for the
// test: no keys in the environment, no profile, no shared files, no
// container or web-identity credentials, and the instance-metadata service
// at imdsEndpoint (a stub, or a closed port), never the real address.
func NoCredentials(t testing.TB, imdsEndpoint string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_CONFIG_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "", "AWS_EC2_METADATA_SERVICE_ENDPOINT": imdsEndpoint,
	} {
		t.Setenv(k, v)
	}
}
