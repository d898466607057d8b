package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/runfolder"
	"github.com/s3once/s3once/sink"
)

// checkFolder reads, after the run, the partition manifests of every
// partition the run wrote, and holds them to the files the run reported:
// the summary's counts are then the folder's, and a summary that would
// disagree with the folder is an error instead.
func checkFolder(ctx context.Context, w io.Writer, c runfolder.Client, bucket, prefix string, rs []sink.FileResult) error {
	var parts []runfolder.Partition
	seen := map[runfolder.Partition]bool{}
	for _, r := range rs {
		p := runfolder.Partition{Destination: r.Destination, Window: r.Window}
		if !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	what := fmt.Sprintf("its %d partition manifests list", len(parts))
	listed, err := runfolder.Manifests(ctx, c, bucket, prefix, parts)
	if errors.Is(err, runfolder.ErrNoManifest) {
		// A folder of output version 1 (an earlier release's) has no
		// manifests: its partitions' files are what a listing finds.
		what = fmt.Sprintf("its %d partitions (output version 1, without manifests) hold", len(parts))
		listed, err = partitionFiles(ctx, c, bucket, prefix, seen)
	}
	if err != nil {
		return fmt.Errorf("read the run's partitions: %w", err)
	}
	// rs is in key order, one result per key (harness.Results), as
	// Manifests' entries are.
	if len(listed) != len(rs) {
		return fmt.Errorf("the run reported %d files, %s %d", len(rs), what, len(listed))
	}
	for i, e := range listed {
		if r := rs[i]; e.Key != r.Key || e.Size != r.Bytes {
			return fmt.Errorf("the run reported s3://%s/%s (%d bytes), %s s3://%s/%s (%d bytes)", bucket, r.Key, r.Bytes, what, bucket, e.Key, e.Size)
		}
	}
	fmt.Fprintf(w, "the folder agrees: %s these %d files\n", what, len(listed))
	return nil
}

// partitionFiles lists the s3once files of the given partitions, in key
// order, as manifest entries without their checksums and record counts.
func partitionFiles(ctx context.Context, c runfolder.Client, bucket, prefix string, parts map[runfolder.Partition]bool) ([]manifest.Entry, error) {
	files, err := runfolder.Files(ctx, c, bucket, prefix)
	if err != nil {
		return nil, err
	}
	var out []manifest.Entry
	for _, f := range files {
		for p := range parts {
			if ownkeys.IsPartitionFile(prefix, p.Destination, p.Window, f.Key) {
				out = append(out, manifest.Entry{Key: f.Key, Size: f.Size})
				break
			}
		}
	}
	return out, nil
}
