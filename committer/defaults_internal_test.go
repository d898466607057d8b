package committer

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3bucket"
)

// TestDefaultsAreTheBucketClients: a committer with default options and a
// s3bucket.Client with default options (the sink's and the CLI's, beside the
// committer over the same client) make their calls under the same policy.
func TestDefaultsAreTheBucketClients(t *testing.T) {
	c, err := New(s3.New(s3.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := c.b.Options(), s3bucket.New(s3.New(s3.Options{}), s3bucket.Options{}).Options()
	if got != want {
		t.Fatalf("the committer's bucket options %+v, a default s3bucket.Client's %+v", got, want)
	}
}
