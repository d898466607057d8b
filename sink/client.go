package sink

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
)

// A worker's DoFns share one S3 client and one committer per connection
// settings: connections are reused, and the committer probes each bucket for
// conditional writes once per process rather than once per DoFn instance.
var (
	workersMu sync.Mutex
	workers   = map[connection]*worker{}
)

// connection is the part of the settings that makes a client.
type connection struct {
	Endpoint, Region                           string
	PathStyle, DisableChecksums                bool
	AccessKeyID, SecretAccessKey, SessionToken string
	MaxAttempts                                int
	// StagingPrefix is the committer's: it cleans up only under it.
	StagingPrefix string
	// Requests fingerprints the request settings (requests.go).
	Requests string
}

type worker struct {
	client    *s3.Client
	committer *committer.Committer
}

// worker returns the process's client and committer for the settings.
func (s settings) worker(ctx context.Context) (*worker, error) {
	key := connection{
		Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle, DisableChecksums: s.DisableChecksums,
		AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		MaxAttempts: s.MaxAttempts, StagingPrefix: s.StagingPrefix, Requests: s.Requests.fingerprint(),
	}
	workersMu.Lock()
	defer workersMu.Unlock()
	if w, ok := workers[key]; ok {
		return w, nil
	}
	client, err := s.newClient(ctx)
	if err != nil {
		return nil, err
	}
	cm, err := committer.New(client, committer.Options{StagingPrefix: s.StagingPrefix, Versioned: s.Requests.VersionedBucket})
	if err != nil {
		return nil, fmt.Errorf("s3once sink: %w", err)
	}
	w := &worker{client: client, committer: cm}
	workers[key] = w
	return w, nil
}

// newClient builds a worker's S3 client from the settings: the AWS SDK's
// default chain, with the settings' region, endpoint, addressing and static
// credentials on top when they are set, and the request settings (bucket
// owner, encryption, object settings) on every call.
func (s settings) newClient(ctx context.Context) (*s3.Client, error) {
	req, err := s.Requests.build()
	if err != nil {
		return nil, err
	}
	c, err := s3call.NewClient(ctx, s3call.ClientOptions{
		Endpoint: s.Endpoint, Region: s.Region, PathStyle: s.PathStyle,
		AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		MaxAttempts: s.MaxAttempts, DisableChecksums: s.DisableChecksums,
		Options: []func(*s3.Options){req.Apply},
	})
	if err != nil {
		return nil, fmt.Errorf("s3once sink: %w", err)
	}
	return c, nil
}
