package main

import (
	"flag"
	"testing"
)

// The S3 endpoint is --s3-endpoint, and --s3_endpoint, its earlier
// spelling, sets the same flag.
func TestS3EndpointFlags(t *testing.T) {
	for _, name := range []string{"s3-endpoint", "s3_endpoint"} {
		*endpoint = ""
		if err := flag.CommandLine.Parse([]string{"--" + name, "http://127.0.0.1:7070"}); err != nil {
			t.Fatalf("--%s: %v", name, err)
		}
		if *endpoint != "http://127.0.0.1:7070" {
			t.Errorf("--%s set the endpoint to %q", name, *endpoint)
		}
	}
}
