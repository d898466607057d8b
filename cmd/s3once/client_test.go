package main

import (
	"flag"
	"io"
	"testing"
)

// The tool names the S3 endpoint --s3-endpoint, as the examples do, and
// keeps --endpoint as the same flag: it links no Beam, so no job service
// claims that name here.
func TestEndpointFlagAliases(t *testing.T) {
	for _, name := range []string{"s3-endpoint", "endpoint"} {
		var cf clientFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cf.register(fs)
		if err := fs.Parse([]string{"--" + name, "http://127.0.0.1:7070", "--path-style"}); err != nil {
			t.Fatalf("--%s: %v", name, err)
		}
		if cf.endpoint != "http://127.0.0.1:7070" || !cf.pathStyle {
			t.Errorf("--%s set endpoint %q, path style %v", name, cf.endpoint, cf.pathStyle)
		}
	}
}
