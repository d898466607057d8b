package integration

import (
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3test"
)

// TestTokenRecoveryAcrossProcessDeathOnMinIO is
// TestTokenRecoveryAcrossProcessDeath on MinIO, a second, independent S3
// server, for two files (one with inline tails, one with side objects): a
// writer SIGKILLed at random and resumed from its last durable token commits
// the file byte-exact, and a sweep then leaves no upload or side object.
func TestTokenRecoveryAcrossProcessDeathOnMinIO(t *testing.T) {
	t.Parallel()
	tokenRecovery(t, s3test.Options{Kind: s3test.MinIO}, 2)
}
