// Command streamwriter writes one file through a recoverable.Stream the way a
// runner would: it persists the stream now and then and keeps the encoded
// resume token in a durable checkpoint file (written to a temporary file,
// fsynced, renamed, and the folder fsynced), retiring the previous token's
// side object only once the new checkpoint is durable. When it starts and a
// checkpoint exists, it resumes from it: the stream is recovered from the
// token, and writing goes on at the token's position.
//
// The integration tests SIGKILL it at random moments and start it again
// until it finishes; the object must then hold exactly the pattern bytes.
//
// It prints one line per step, flushed: "opened", "recovered seq=N pos=P",
// "checkpoint seq=N pos=P", "closed", "committed created=B".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/integration/internal/pattern"
	"github.com/s3once/s3once/recoverable"
)

// Kinds of checkpoint, the first byte of the checkpoint file.
const (
	kindResume = 'R'
	kindCommit = 'C'
)

func main() {
	var (
		endpoint, bucket, key, state string
		size, partSize, every        int64
		seed                         uint64
		inlineMax                    int
		pace                         time.Duration
	)
	flag.StringVar(&endpoint, "endpoint", "", "S3 endpoint URL")
	flag.StringVar(&bucket, "bucket", "", "bucket")
	flag.StringVar(&key, "key", "", "object key")
	flag.StringVar(&state, "state", "", "folder of the checkpoint file")
	flag.Int64Var(&size, "size", 24<<20, "file size in bytes")
	flag.Int64Var(&partSize, "part-size", 5<<20, "part size")
	flag.Int64Var(&every, "persist-every", 1<<20, "mean bytes between two checkpoints")
	flag.Uint64Var(&seed, "seed", 1, "content seed")
	flag.IntVar(&inlineMax, "inline-tail-max", 0, "recoverable.Options.InlineTailMax")
	flag.DurationVar(&pace, "pace", 0, "pause after each checkpoint")
	flag.Parse()
	if err := run(endpoint, bucket, key, state, size, partSize, every, seed, inlineMax, pace); err != nil {
		fmt.Fprintf(os.Stderr, "streamwriter: %v\n", err)
		os.Exit(1)
	}
}

func run(endpoint, bucket, key, state string, size, partSize, every int64, seed uint64, inlineMax int, pace time.Duration) error {
	if endpoint == "" || bucket == "" || key == "" || state == "" || size <= 0 || every <= 0 {
		return errors.New("-endpoint, -bucket, -key, -state, -size and -persist-every are required")
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		return fmt.Errorf("AWS config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
	w, err := recoverable.NewWriter(client, recoverable.Options{PartSize: partSize, InlineTailMax: inlineMax})
	if err != nil {
		return err
	}
	c, err := committer.New(client, committer.Options{})
	if err != nil {
		return err
	}
	content := pattern.Bytes(seed, int(size))
	ckpt := filepath.Join(state, "checkpoint")

	saved, err := os.ReadFile(ckpt)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	var (
		st   *recoverable.Stream
		pos  int64
		prev *recoverable.ResumeToken // the token of the durable checkpoint
	)
	switch {
	case len(saved) == 0:
		if st, err = w.Open(ctx, bucket, key, recoverable.ObjectOptions{ContentType: "text/plain"}); err != nil {
			return err
		}
		say("opened upload=%s", st.UploadID())
	case saved[0] == kindCommit:
		cr, err := coder.DecodeCommitToken(saved[1:])
		if err != nil {
			return fmt.Errorf("decode commit token: %w", err)
		}
		return commit(ctx, c, cr)
	case saved[0] == kindResume:
		rr, err := coder.DecodeResumeToken(saved[1:])
		if err != nil {
			return fmt.Errorf("decode resume token: %w", err)
		}
		if st, err = w.Recover(ctx, rr); err != nil {
			return err
		}
		pos = rr.Size()
		prev = &rr
		say("recovered seq=%d pos=%d upload=%s", rr.Seq, pos, rr.UploadID)
	default:
		return fmt.Errorf("checkpoint file starts with %q", saved[0])
	}
	defer func() { _ = st.Dispose(context.WithoutCancel(ctx)) }()

	r := rand.New(rand.NewPCG(seed, uint64(pos)))
	next := pos + every/2 + r.Int64N(every)
	for pos < size {
		n := min(int64(1+r.IntN(256<<10)), size-pos)
		if _, err := st.Write(content[pos : pos+n]); err != nil {
			return err
		}
		pos += n
		if pos >= next && pos < size {
			rr, err := st.Persist(ctx)
			if err != nil {
				return err
			}
			tok, err := coder.EncodeResumeToken(rr)
			if err != nil {
				return err
			}
			if err := writeDurable(ckpt, append([]byte{kindResume}, tok...)); err != nil {
				return err
			}
			say("checkpoint seq=%d pos=%d", rr.Seq, pos)
			// The previous checkpoint is retired: its tail is no longer needed.
			if prev != nil && prev.Tail.Object != rr.Tail.Object {
				if err := w.Cleanup(ctx, *prev); err != nil {
					return err
				}
			}
			prev = &rr
			next = pos + every/2 + r.Int64N(every)
			time.Sleep(pace)
		}
	}
	cr, err := st.CloseForCommit(ctx)
	if err != nil {
		return err
	}
	tok, err := coder.EncodeCommitToken(cr)
	if err != nil {
		return err
	}
	if err := writeDurable(ckpt, append([]byte{kindCommit}, tok...)); err != nil {
		return err
	}
	say("closed size=%d", cr.Size())
	return commit(ctx, c, cr)
}

func commit(ctx context.Context, c *committer.Committer, cr recoverable.CommitToken) error {
	res, err := c.CommitAfterRecovery(ctx, cr)
	if err != nil {
		return err
	}
	say("committed created=%t size=%d", res.Created, res.Size)
	return nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
	_ = os.Stdout.Sync()
}

// writeDurable replaces path with data so that a crash leaves either the old
// or the new content, never a mix: a temporary file, fsynced, renamed over
// path, and the folder fsynced so that the rename itself is durable.
func writeDurable(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".checkpoint-*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: sync folder: %w", err)
	}
	return nil
}
