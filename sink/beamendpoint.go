package sink

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
)

// beamEndpointHint says what to do when Beam's --endpoint holds the S3
// server's URL.
const beamEndpointHint = "Beam reads --endpoint as the address of a job service (host:port); give the S3 server's URL as --s3-endpoint"

// CheckBeamEndpoint refuses Beam's own --endpoint flag (jobopts.Endpoint)
// when it holds an S3 server's URL: the mistake of giving the S3 endpoint
// to a program as --endpoint, which Beam, linked into every program, takes
// as the address of its job service. s3Endpoint is the sink's
// Config.Endpoint ("" where it is not known or is AWS).
//
// The rule: --endpoint is refused when it is
//
//   - a URL whose scheme is http, https or s3 (any case), such as
//     "http://127.0.0.1:7070": a job service is a gRPC server, addressed
//     as host:port or as a gRPC target whose scheme names a resolver (dns,
//     unix, passthrough, xds, ...), and gRPC has no resolver of those
//     schemes, so no runner can reach a job service by such a value; or
//   - host:port of s3Endpoint itself (port 80 or 443 where the URL gives
//     none): one address cannot serve both S3 and a job service.
//
// Anything else passes: empty (the embedded runner), host:port
// ("localhost:8099"), a gRPC target ("dns:///jobs.internal:8099",
// "unix:///run/beam.sock"). It does not depend on --runner: the runners
// that dial a job service (prism, universal, Flink, Spark) would wait
// minutes on such a value and then fail, and the others (direct,
// Dataflow) do not read --endpoint at all, so an S3 URL given there was
// meant for the sink, which would otherwise go to AWS.
//
// The error wraps ErrInvalidConfig and is one line, the same wherever it
// is found: Preflight reports it before any S3 call, Write while the
// pipeline is built, and program.Run before the runner starts.
func CheckBeamEndpoint(s3Endpoint string) error {
	return checkBeamEndpoint(*jobopts.Endpoint, s3Endpoint)
}

// checkBeamEndpoint is CheckBeamEndpoint on the value endpoint.
func checkBeamEndpoint(endpoint, s3Endpoint string) error {
	if !looksLikeS3(strings.TrimSpace(endpoint), strings.TrimSpace(s3Endpoint)) {
		return nil
	}
	return fmt.Errorf("%w: --endpoint %s looks like an S3 endpoint: %s", ErrInvalidConfig, endpoint, beamEndpointHint)
}

// looksLikeS3 is the rule of CheckBeamEndpoint.
func looksLikeS3(endpoint, s3Endpoint string) bool {
	if endpoint == "" {
		return false
	}
	if scheme, _, ok := strings.Cut(endpoint, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http", "https", "s3":
			return true
		}
		return false // a gRPC target, such as dns:///host:port
	}
	return sameAddress(endpoint, s3Endpoint)
}

// sameAddress tells whether endpoint (host:port) is the address of the S3
// endpoint URL s3Endpoint.
func sameAddress(endpoint, s3Endpoint string) bool {
	u, err := url.Parse(s3Endpoint)
	if s3Endpoint == "" || err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			host += ":80"
		case "https":
			host += ":443"
		}
	}
	return strings.EqualFold(endpoint, u.Host) || strings.EqualFold(endpoint, host)
}
