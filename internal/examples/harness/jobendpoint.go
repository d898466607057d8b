package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/s3once/s3once/sink"
)

// JobServiceWait bounds how long the examples wait for a job service named
// by Beam's --endpoint to answer before they give up.
const JobServiceWait = 10 * time.Second

// errJobEndpoint marks a Beam --endpoint that cannot be a job service.
var errJobEndpoint = errors.New("bad job service endpoint")

// jobServiceRunners are the runners that dial Beam's --endpoint as the
// address of a job service ("" is beamx's default, prism). The others
// (direct, Dataflow, ...) do not read it.
var jobServiceRunners = map[string]bool{
	"": true, "prism": true, "PrismRunner": true,
	"universal": true, "portable": true, "PortableRunner": true, "flink": true, "FlinkRunner": true, "spark": true, "SparkRunner": true,
}

// CheckJobEndpoint checks Beam's --endpoint flag (jobopts.Endpoint) for the
// runner named by --runner; see checkJobEndpoint.
func CheckJobEndpoint(ctx context.Context, s3Endpoint string) error {
	return checkJobEndpoint(ctx, *runners.Runner, s3Endpoint, JobServiceWait)
}

// jobEndpointHint says what Beam's --endpoint is for.
const jobEndpointHint = "Beam reads --endpoint as the address of a job service (host:port); give the S3 server's URL as --s3-endpoint"

// checkJobEndpoint fails at once, with a hint, where Beam's --endpoint
// would make a runner wait for minutes and then fail, or go past the S3
// server: the S3 server's URL, on any runner, refused by the sink's own
// rule (sink.CheckBeamEndpoint, which Preflight, Write and program.Run
// apply too, with the same message); or, on a runner that dials a job
// service, an address where no gRPC server answers within wait. Beam's
// runners dial the job service and block until it answers, printing
// nothing meanwhile.
func checkJobEndpoint(ctx context.Context, runner, s3Endpoint string, wait time.Duration) error {
	if err := sink.CheckBeamEndpoint(s3Endpoint); err != nil {
		return err
	}
	endpoint := *jobopts.Endpoint
	if endpoint == "" || !jobServiceRunners[runner] {
		return nil
	}
	if err := jobServiceAnswers(ctx, endpoint, wait); err != nil {
		return fmt.Errorf("%w: no job service answers at --endpoint %s: %w; start the job server first, or drop --endpoint to run on the embedded runner (%s)", errJobEndpoint, endpoint, err, jobEndpointHint)
	}
	return nil
}

// jobServiceAnswers connects to a gRPC server at endpoint (host:port, or a
// gRPC target with its resolver's scheme, as Beam dials it) and waits
// until the connection is ready, for at most wait. A server of another
// protocol (an S3 server speaking HTTP/1.1) never becomes ready.
func jobServiceAnswers(ctx context.Context, endpoint string, wait time.Duration) error {
	target := endpoint
	if !strings.Contains(endpoint, "://") {
		target = "passthrough:///" + endpoint
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
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
