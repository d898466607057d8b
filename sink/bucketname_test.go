package sink

import (
	"errors"
	"strings"
	"testing"
)

// TestBucketNames: Validate refuses, in one line, bucket names that no S3
// bucket can have, and keeps every name a bucket may have, older us-east-1
// names included.
func TestBucketNames(t *testing.T) {
	good := []string{"abc", "my-bucket", "logs.example.com", "a1b", strings.Repeat("a", 63),
		"Legacy_Bucket", strings.Repeat("b", 255)}
	bad := []string{"ab", "a", "-bucket", "bucket-", ".bucket", "my..bucket", "my bucket", "s3://bucket",
		"bucket/prefix", "192.168.1.1", "bücket", strings.Repeat("c", 256), "bucket!"}
	for _, b := range good {
		if err := (Config{Bucket: b}).Validate(); err != nil {
			t.Errorf("Bucket %q: %v", b, err)
		}
	}
	for _, b := range bad {
		err := (Config{Bucket: b}).Validate()
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Bucket %q: %v, want ErrInvalidConfig", b, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "Bucket") || strings.Count(msg, "\n") > 1 {
			t.Errorf("Bucket %q: want one line naming the bucket, got %q", b, msg)
		}
	}
}
