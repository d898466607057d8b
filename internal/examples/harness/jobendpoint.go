package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// JobServiceWait bounds how long the examples wait for a job service named
// by Beam's --endpoint to answer before they give up.
const JobServiceWait = 10 * time.Second

// errJobEndpoint marks a Beam --endpoint that cannot be a job service.
var errJobEndpoint = errors.New("bad job service endpoint")

// jobServiceRunners are the runners that read Beam's --endpoint as the
// address of a job service ("" is beamx's default, prism). Dataflow reads
// --endpoint as one of its own options, so it is not checked.
var jobServiceRunners = map[string]bool{
	"": true, "prism": true, "PrismRunner": true,
	"universal": true, "flink": true, "FlinkRunner": true, "spark": true, "SparkRunner": true,
}

// CheckJobEndpoint checks Beam's --endpoint flag (jobopts.Endpoint) for the
// runner named by --runner; see checkJobEndpoint.
func CheckJobEndpoint(ctx context.Context, s3Endpoint string) error {
	return checkJobEndpoint(ctx, *runners.Runner, *jobopts.Endpoint, s3Endpoint, JobServiceWait)
}

// checkJobEndpoint fails at once, with a hint, where Beam's --endpoint
// would make a job-service runner wait for minutes and then fail: a value
// that looks like an S3 URL (a scheme, or the S3 endpoint's own address),
// or one where no gRPC server answers within wait. Beam's runners dial the
// job service and block until it answers, printing nothing meanwhile.
func checkJobEndpoint(ctx context.Context, runner, endpoint, s3Endpoint string, wait time.Duration) error {
	if endpoint == "" || !jobServiceRunners[runner] {
		return nil
	}
	hint := "Beam reads --endpoint as the address of a job service (host:port); give the S3 server's URL as --s3-endpoint"
	if strings.Contains(endpoint, "://") || sameAddress(endpoint, s3Endpoint) {
		return fmt.Errorf("%w: --endpoint %s looks like an S3 endpoint: %s", errJobEndpoint, endpoint, hint)
	}
	if err := jobServiceAnswers(ctx, endpoint, wait); err != nil {
		return fmt.Errorf("%w: no job service answers at --endpoint %s: %w; start the job server first, or drop --endpoint to run on the embedded runner (%s)", errJobEndpoint, endpoint, err, hint)
	}
	return nil
}

// sameAddress tells whether endpoint (host:port) is the address of the S3
// endpoint URL s3Endpoint.
func sameAddress(endpoint, s3Endpoint string) bool {
	if s3Endpoint == "" {
		return false
	}
	if endpoint == s3Endpoint {
		return true
	}
	u, err := url.Parse(s3Endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		switch u.Scheme {
		case "http":
			host += ":80"
		case "https":
			host += ":443"
		}
	}
	return strings.EqualFold(endpoint, u.Host) || strings.EqualFold(endpoint, host)
}

// jobServiceAnswers connects to a gRPC server at endpoint and waits until
// the connection is ready, for at most wait. A server of another protocol
// (an S3 server speaking HTTP/1.1) never becomes ready.
func jobServiceAnswers(ctx context.Context, endpoint string, wait time.Duration) error {
	conn, err := grpc.NewClient("passthrough:///"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not ready within %v (last state %s)", wait, strings.ToLower(s.String()))
			}
			return ctx.Err()
		}
	}
}
