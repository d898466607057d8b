package sink

// Partitions: the files of one (Prefix, destination, window), which readers
// read by a glob. A partition a run writes holds exactly that run's files
// (identical earlier files kept): the run-wide barrier refuses a run that
// would leave an earlier run's file beside its own (checkPartitions), and,
// where there is no barrier, the commit stage refuses to add a file to a
// partition whose manifest exists and does not list it (partitionGuard).

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
)

// ErrPartitionChanged is wrapped by the error of a run that would leave a
// partition (a destination and window under Prefix) holding files of two
// runs. Its message carries the stable code errcode.PartitionChanged.
var ErrPartitionChanged = errcode.New(errcode.PartitionChanged, "a partition holds files this run does not write")

// PartitionChangedError names the partition and some of the files in it
// that the run does not produce. It wraps ErrPartitionChanged.
type PartitionChangedError struct {
	Bucket, Prefix string
	// Destination and Window name the partition.
	Destination, Window string
	// Keys are some of the files this run does not produce (at most
	// shownKeys), of Count in all.
	Keys  []string
	Count int
	// Manifest, when set, is the partition's manifest, which does not list
	// this run's file Keys[0]: the partition is complete and closed.
	Manifest string
	// Done says what the run did about it.
	Done string
}

// shownKeys bounds the keys an error names.
const shownKeys = 3

func (e *PartitionChangedError) Error() string {
	var b strings.Builder
	where := "s3://" + e.Bucket + "/" + ownkeys.PartitionFilePrefix(e.Prefix, e.Destination, e.Window) + "*"
	if e.Manifest != "" {
		fmt.Fprintf(&b, "s3once sink: the partition %s is complete (its manifest s3://%s/%s exists) and does not list this run's file s3://%s/%s: the run's input or settings differ from the run that wrote it; ",
			where, e.Bucket, e.Manifest, e.Bucket, e.Keys[0])
	} else {
		fmt.Fprintf(&b, "s3once sink: the partition %s holds %d s3once file(s) that this run does not write (", where, e.Count)
		for i, k := range e.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("s3://" + e.Bucket + "/" + k)
		}
		if e.Count > len(e.Keys) {
			fmt.Fprintf(&b, ", and %d more", e.Count-len(e.Keys))
		}
		b.WriteString("): the run's input or settings differ from the run that wrote them, and the partition would hold files of both; ")
	}
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	b.WriteString("delete the partition's files (and its manifest) to replace them, or write to a fresh Prefix: ")
	b.WriteString(ErrPartitionChanged.Error())
	return b.String()
}

func (e *PartitionChangedError) Unwrap() error { return ErrPartitionChanged }

// partitionOf is a file's partition.
type partitionOf struct{ destination, window string }

// isRunFile reports whether key, a file name of the partition, has this
// run's extension: the name's file index (digits) is followed by ext alone.
// A name of another extension (a foreign object named like s3once's files,
// or another format's, which the settings marker refuses) is not a file
// of the partition for this run.
func isRunFile(key, ext string) bool {
	rest, ok := strings.CutSuffix(key, ext)
	return ok && rest != "" && rest[len(rest)-1] >= '0' && rest[len(rest)-1] <= '9'
}

// checkPartitions lists every partition the run writes and refuses the run
// if any holds a file of this run's extension that the run does not
// produce. One listing per partition (a call per 1,000 keys), 16 at once.
func (f *barrierFn) checkPartitions(ctx context.Context, all []*barrierFile) error {
	mine := make(map[string]bool, len(all))
	parts := map[partitionOf]bool{}
	for _, bf := range all {
		mine[bf.cr.Key] = true
		parts[partitionOf{bf.p.Result.Destination, bf.p.Result.Window}] = true
	}
	var mu sync.Mutex
	var refused *PartitionChangedError
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for pt := range parts {
		g.Go(func() error {
			e := &PartitionChangedError{Bucket: f.S.Bucket, Prefix: f.S.Prefix, Destination: pt.destination, Window: pt.window, Done: settingsRefusedDone}
			err := f.c.List(gctx, f.S.Bucket, ownkeys.PartitionFilePrefix(f.S.Prefix, pt.destination, pt.window), func(page []committer.Object) error {
				for _, o := range page {
					if mine[o.Key] || !ownkeys.IsPartitionFile(f.S.Prefix, pt.destination, pt.window, o.Key) || !isRunFile(o.Key, f.Ext) {
						continue
					}
					if len(e.Keys) < shownKeys {
						e.Keys = append(e.Keys, o.Key)
					}
					e.Count++
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("barrier: list the partition %s: %w", ownkeys.PartitionFilePrefix(f.S.Prefix, pt.destination, pt.window), err)
			}
			if e.Count > 0 {
				mu.Lock()
				if refused == nil || e.Keys[0] < refused.Keys[0] {
					refused = e
				}
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	return nil
}

// partitionGuard is the commit stage's check where there is no barrier
// (unbounded input, FinalizeCommit "always"), output version 2: a file is
// committed into a partition only while the partition has no manifest, or
// when its manifest lists the file with its size and CRC64NVME (a rerun of
// a complete partition commits nothing new). Manifests, once read, are
// kept: they never change.
type partitionGuard struct {
	mu        sync.Mutex
	manifests map[string]map[string]manifest.Entry // by manifest key; nil: none yet
}

// check refuses the file r with token size and crc where its partition's
// manifest exists and does not list it.
func (g *partitionGuard) check(ctx context.Context, c folderStore, prefix string, r FileResult, size int64, crc uint64) error {
	key := ownkeys.ManifestKey(prefix, r.Destination, r.Window)
	g.mu.Lock()
	entries, ok := g.manifests[key]
	g.mu.Unlock()
	if !ok {
		b, found, err := c.ReadObject(ctx, r.Bucket, key, manifest.MaxBytes)
		if err != nil {
			return fmt.Errorf("read the partition manifest: %w", err)
		}
		if !found {
			return nil
		}
		list, err := manifest.Decode(b)
		if err != nil {
			return fmt.Errorf("the partition manifest s3://%s/%s: %w; inspect it, or write to a fresh Prefix", r.Bucket, key, err)
		}
		entries = make(map[string]manifest.Entry, len(list))
		for _, e := range list {
			entries[e.Key] = e
		}
		g.mu.Lock()
		if g.manifests == nil {
			g.manifests = map[string]map[string]manifest.Entry{}
		}
		g.manifests[key] = entries
		g.mu.Unlock()
	}
	if e, ok := entries[r.Key]; ok && e.Size == size && e.CRC64NVME == crc {
		return nil
	}
	return &PartitionChangedError{
		Bucket: r.Bucket, Prefix: prefix, Destination: r.Destination, Window: r.Window,
		Keys: []string{r.Key}, Count: 1, Manifest: key,
		Done: "this file was not committed; its upload is left for the sweep",
	}
}
