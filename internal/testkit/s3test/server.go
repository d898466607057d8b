// Package s3test runs a real S3 server for tests: on 127.0.0.1, on a free
// port, with a temporary root and fixed keys. Each test gets its own bucket,
// made with a PUT. The server is versitygw by default, or MinIO
// (Options.Kind), a second, independent implementation. It can be SIGKILLed
// and restarted, and it is always stopped by its own PID when the test that
// started it ends.
//
// Starting and stopping the process is package internal/localserver's work,
// which links no testing code so that `make run` can use it too; this
// package adds what only tests need on top of it: Start, which ties the
// server to a test, Server.Bucket, and the helpers that read a bucket
// (Keys, Object, Objects, Uploads). The names below are localserver's, so
// tests need only this package.
//
// # How MinIO differs from versitygw
//
// Observed with MinIO v0.0.0-20260212201848-7aac2a2c5b7c and versitygw
// v1.8.0; TestMinIOBehaviour and TestMinIOKMSETags fail when MinIO changes.
//
//   - Conditional completes: both answer 412 PreconditionFailed to
//     CompleteMultipartUpload with If-None-Match: * over an existing key.
//     s3once relies on it as on AWS.
//   - Checksum types: both take CRC64NVME parts in a FULL_OBJECT upload and
//     return the full-object CRC64NVME on HEAD with checksum mode (type
//     FULL_OBJECT on MinIO). Both list each part's CRC64NVME in ListParts,
//     so parts are identified by number, size and checksum on both.
//   - An empty file: MinIO refuses to complete an upload of one zero-byte
//     part when the request carries the zero-byte full-object CRC64NVME
//     (AAAAAAAAAAA=) and MpuObjectSize 0: 400 XAmzContentChecksumMismatch,
//     "The provided 'x-amz-checksum' header does not match what was
//     computed". The same complete without the full-object checksum
//     succeeds. versitygw takes both. The committer (and the conformance
//     suite's completion) leaves the full-object checksum out for an empty
//     file and checks the object at the key afterwards (recoverable
//     TestConformanceMinIO/EmptyFile, committer TestOnMinIO/CommitEmptyFile).
//   - Aborting a completed upload: MinIO answers 204, as if it aborted
//     something; versitygw (and AWS) answer 404 NoSuchUpload. The committer
//     therefore looks at the upload (ListParts) before it aborts one on its
//     already-committed path and reports UploadAborted only for an upload
//     it saw open (committer TestOnMinIO/CommitTwice,
//     TestUploadAbortedOnlyWhenOpen).
//   - Listing uploads: MinIO's ListMultipartUploads matches Prefix only as a
//     whole key: "dir/" lists none of the uploads under dir/, "dir/a" lists
//     dir/a's, and no prefix lists all. versitygw filters by prefix as AWS
//     does. The sweep therefore lists without a prefix, from the folder's
//     name on (KeyMarker, which both honour), and filters keys itself
//     (committer TestOnMinIO/SweepRemovesExactlyTheStale,
//     SweepOlderThanByServerClock, TestSweepListsOnlyItsFolders).
//   - SSE-KMS: MinIO started with a static key (MINIO_KMS_SECRET_KEY,
//     Options.KMSSecretKey) encrypts parts uploaded with
//     x-amz-server-side-encryption: aws:kms, and their ETags are not MD5s of
//     the bytes; the same bytes uploaded again get another ETag, as on AWS.
//     versitygw has no KMS. So MinIO can host a real-server test of
//     ETags that are not content, beside the fault wrapper's random ETags.
//   - Layout: versitygw keeps bucket/key at Root/bucket/key, which some
//     tests read or damage directly; MinIO keeps its own format there, so
//     those tests run on versitygw only. MaxParts (a lower part ceiling) is
//     versitygw only.
package s3test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/localserver"
)

// Fixed credentials of every test server.
const (
	AccessKey = localserver.AccessKey
	SecretKey = localserver.SecretKey
	Region    = localserver.Region
)

// The environment variables that hold the test servers' credentials, set
// in every test process that imports this package, for a sink.Config's
// Credentials to name.
const (
	AccessKeyEnv = localserver.AccessKeyEnv
	SecretKeyEnv = localserver.SecretKeyEnv
)

func init() {
	if err := localserver.Export(); err != nil {
		panic(err)
	}
}

// Kind names an S3 server implementation.
type Kind = localserver.Kind

// The servers the tests run. Versitygw is the default.
const (
	Versitygw = localserver.Versitygw
	MinIO     = localserver.MinIO
)

// Options tune a server (see localserver.Options).
type Options = localserver.Options

// ClientOptions tune Server.Client and NewClient (see localserver.ClientOptions).
type ClientOptions = localserver.ClientOptions

// Server is one server process; it has every method of localserver.Server,
// and Bucket.
type Server struct {
	*localserver.Server
}

// Start starts a server for the test and stops it (by PID) when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Launch(opts)
	if err != nil {
		t.Fatalf("start S3 server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a server outside a single test (TestMain, a package-wide
// server). The caller must call Stop.
func Launch(opts Options) (*Server, error) {
	s, err := localserver.Launch(opts)
	if err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// Bucket creates a new uniquely named bucket for the test.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name, err := s.NewBucket(context.Background())
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return name
}

// Binary returns the path of the versitygw executable, or an error telling
// how to install it.
func Binary() (string, error) { return localserver.Binary() }

// Tool returns the path of another executable the Makefile installs
// (toxiproxy-server, benchstat).
func Tool(name string) (string, error) { return localserver.Tool(name) }

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) { return localserver.FreePort() }

// RepairInProgress undoes versitygw v1.8.0's stranded
// CompleteMultipartUpload under root (see localserver.RepairInProgress).
func RepairInProgress(root string) error { return localserver.RepairInProgress(root) }

// NewClient returns an S3 client for any endpoint with the test credentials.
func NewClient(endpoint string, o ClientOptions) *s3.Client {
	return localserver.NewClient(endpoint, o)
}
