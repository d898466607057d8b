package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/examples/harness"
	"github.com/s3once/s3once/internal/runfolder"
)

// progress shows, while the pipeline runs, what the bucket holds: the files
// being written (open multipart uploads) and the files committed so far. It
// reads the server, as any observer could, so it shows what is durable, not
// what the pipeline believes: the files it counts are the s3once files in
// the folder (runfolder.Files), not the folder's settings marker, its
// partition manifests or its completion markers. A rerun starts from the
// earlier run's files, which it keeps.
type progress struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startProgress(ctx context.Context, w io.Writer, c *s3.Client, bucket, prefix string) *progress {
	ctx, cancel := context.WithCancel(ctx)
	p := &progress{cancel: cancel}
	tty := isTerminal(w)
	every := 250 * time.Millisecond
	if !tty {
		every = 2 * time.Second
	}
	began := time.Now()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		spin := []rune("|/-\\")
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
			}
			line := snapshot(ctx, c, bucket, prefix)
			el := time.Since(began).Truncate(100 * time.Millisecond)
			if tty {
				fmt.Fprintf(w, "\r\033[K%c %6v  %s", spin[i%len(spin)], el, line)
			} else {
				fmt.Fprintf(w, "  %6v  %s\n", el, line)
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	p.cancel()
	p.wg.Wait()
}

func snapshot(ctx context.Context, c *s3.Client, bucket, prefix string) string {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	open := 0
	ups, err := c.ListMultipartUploads(cctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	if err == nil {
		open = len(ups.Uploads)
	}
	var bytes int64
	files, err := runfolder.Files(cctx, c, bucket, prefix)
	for _, f := range files {
		bytes += f.Size
	}
	if err != nil {
		return fmt.Sprintf("files being written: %d · committed: not known (%v)", open, err)
	}
	return fmt.Sprintf("files being written: %d · committed: %d files, %s", open, len(files), harness.HumanBytes(bytes))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
