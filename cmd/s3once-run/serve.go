package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/s3once/s3once/internal/localserver"
)

// ServePort is the loopback port `make server` listens on.
const ServePort = 7070

// serveOptions say where the server for a program of one's own listens and
// keeps its data, and which bucket it gets.
type serveOptions struct {
	data   string // absolute
	bucket string
	port   int
}

// serve is `make server`: it starts the local S3 server on a fixed loopback
// port for a program of one's own, makes the bucket, prints the lines to
// export and the endpoint, and stops the server when ctx ends (Ctrl-C).
// Its data stays in the data folder, objects as plain files.
func serve(ctx context.Context, o serveOptions, out io.Writer) error {
	srv, err := localserver.Launch(localserver.Options{Root: o.data, Port: o.port})
	if err != nil {
		return fmt.Errorf("start the S3 server: %w", err)
	}
	defer srv.Stop()
	if err := ensureBucket(ctx, srv.Client(localserver.ClientOptions{MaxAttempts: 3}), o.bucket); err != nil {
		return err
	}
	fmt.Fprintf(out, `S3 server (versitygw, pid %d) listening on %s
bucket %s is ready; its objects are plain files under %s

In the shell that runs your program:

  export AWS_ACCESS_KEY_ID=%s
  export AWS_SECRET_ACCESS_KEY=%s
  export AWS_REGION=%s

and give it the endpoint and the bucket, as pipelines/minimal takes them:

  --s3-endpoint %s --bucket %s

Ctrl-C stops the server; the files stay (make clean removes them).
`, srv.PID(), srv.Endpoint(), o.bucket, filepath.Join(o.data, o.bucket)+string(filepath.Separator),
		localserver.AccessKey, localserver.SecretKey, localserver.Region, srv.Endpoint(), o.bucket)
	<-ctx.Done()
	fmt.Fprintf(out, "\nstopping the S3 server (pid %d)\n", srv.PID())
	return nil
}
