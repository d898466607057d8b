package sink

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/s3once/s3once/internal/s3req"
)

// Values of Config.Encryption.
const (
	// EncryptionSSES3 asks for S3-managed keys (AES256).
	EncryptionSSES3 = s3req.SSES3
	// EncryptionSSEKMS asks for KMS keys (aws:kms), Config.KMSKeyID or the
	// account's default.
	EncryptionSSEKMS = s3req.SSEKMS
	// EncryptionSSEKMSDSSE asks for dual-layer KMS encryption.
	EncryptionSSEKMSDSSE = s3req.SSEKMSDSSE
)

// requestSettings is the part of the settings that every S3 request of the
// sink carries (see internal/s3req). It holds no secret: an SSE-C key is
// named by where each machine finds it, never by its value.
type requestSettings struct {
	Requests
	// CompletionMarker is not a header: see completion_marker.go.
	CompletionMarker string `json:"completionMarker,omitempty"`
}

// requestSettings takes c's request settings and checks what can be checked
// without the SSE-C key (which lives on the workers).
func (c Config) requestSettings() (requestSettings, []string) {
	r := requestSettings{Requests: c.Requests, CompletionMarker: c.CompletionMarker}
	r.Tags, r.Metadata = maps.Clone(c.Tags), maps.Clone(c.Metadata)
	var problems []string
	req := r.withoutKey()
	if r.SSECustomerKeyEnv != "" && r.SSECustomerKeyFile != "" {
		problems = append(problems, "SSECustomerKeyEnv and SSECustomerKeyFile exclude each other: name one place for the SSE-C key")
	}
	if r.customerKey() && r.Encryption != "" {
		problems = append(problems, fmt.Sprintf("an SSE-C key (SSECustomerKeyEnv, SSECustomerKeyFile) and Encryption %q exclude each other: S3 takes one kind of server-side encryption per object", r.Encryption))
	}
	if err := checkMarker(r.CompletionMarker); err != nil {
		problems = append(problems, err.Error())
	}
	if err := req.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	return r, problems
}

func (r requestSettings) customerKey() bool {
	return r.SSECustomerKeyEnv != "" || r.SSECustomerKeyFile != ""
}

func (r requestSettings) withoutKey() s3req.Settings {
	return s3req.Settings{
		ExpectedBucketOwner: r.ExpectedBucketOwner,
		Encryption:          r.Encryption, KMSKeyID: r.KMSKeyID, BucketKey: r.BucketKey,
		StorageClass: r.StorageClass, Tags: r.Tags,
		CacheControl: r.CacheControl, ContentDisposition: r.ContentDisposition, Metadata: r.Metadata,
	}
}

// build makes the request settings on the machine that runs it, reading the
// SSE-C key from its environment or file there.
func (r requestSettings) build() (s3req.Settings, error) {
	s := r.withoutKey()
	key, err := s3req.LoadCustomerKey(r.SSECustomerKeyEnv, r.SSECustomerKeyFile)
	if err != nil {
		return s3req.Settings{}, fmt.Errorf("s3once sink: %w", err)
	}
	s.CustomerKey = key
	if err := s.Validate(); err != nil {
		return s3req.Settings{}, fmt.Errorf("s3once sink: %w", err)
	}
	return s, nil
}

// fingerprint tells request settings apart, as the key of a worker's
// shared client (maps make requestSettings incomparable).
func (r requestSettings) fingerprint() string {
	b, err := json.Marshal(r) // map keys are sorted
	if err != nil {
		return fmt.Sprintf("%#v", r)
	}
	return string(b)
}
