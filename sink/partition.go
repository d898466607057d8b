package sink

// Partitions: the files of one (Prefix, destination, window), which readers
// read by a glob. A partition a run writes holds exactly that run's files
// (identical earlier files kept), and once its manifest exists it never
// grows or changes. Every s3once-shaped name of the partition counts as
// one of its files, whatever its extension: a file of another format or
// codec is another run's as surely as one of another input, and verify
// counts the same way (cmd/s3once). Where the run-wide barrier applies, it
// refuses, before any commit, a run that would leave an earlier run's file
// beside its own or that would add a file to, or drop one from, a
// partition whose manifest exists (checkPartitions). Where there is no
// barrier, the commit stage refuses to add a file to a partition whose
// manifest exists and does not list it, or that holds an s3once file of
// another extension (partitionGuard); and, since a window not yet expired
// has no manifest, a changed rerun into it may commit files beside an
// earlier run's: the manifest stage lists each partition before it writes
// its manifest, and where the partition holds an s3once file the run did
// not commit there, it writes no manifest for it (nor the window's
// completion marker) and fails the run, naming the files
// (PartitionChangedError with Mixed). Such a partition stays without a
// manifest, which s3once verify never passes (unverified: exit 3), until
// it is deleted and written again.

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
)

// ErrPartitionChanged is wrapped by the error of a run that would leave a
// partition (a destination and window under Prefix) holding files of two
// runs. Its message carries the stable code errcode.PartitionChanged.
var ErrPartitionChanged = errcode.New(errcode.PartitionChanged, "a partition holds files this run does not write")

// PartitionChangedError names the partition and what about it this run
// would change. It wraps ErrPartitionChanged.
type PartitionChangedError struct {
	Bucket, Prefix string
	// Destination and Window name the partition.
	Destination, Window string
	// Keys are some of the files of the partition this run does not
	// produce (at most shownKeys), of Count in all; where Manifest is set,
	// some of the files the manifest lists that this run does not write.
	Keys  []string
	Count int
	// Manifest, when set, is the partition's manifest: the partition is
	// complete and closed. Listed is the number of files it lists.
	Manifest string
	Listed   int
	// Added are some of this run's files (at most shownKeys) that the
	// manifest does not list, or lists with other bytes, of AddedCount in
	// all: what the run would have added to the complete partition.
	Added      []string
	AddedCount int
	// Mixed, where Manifest is not set, says the run's files of the
	// partition are committed already, beside the Keys: the partition
	// holds files of both runs (the manifest stage's finding, where there
	// is no barrier).
	Mixed bool
	// Done says what the run did about it.
	Done string
}

// shownKeys bounds the keys an error names.
const shownKeys = 3

func (e *PartitionChangedError) Error() string {
	var b strings.Builder
	where := "s3://" + e.Bucket + "/" + ownkeys.PartitionFilePrefix(e.Prefix, e.Destination, e.Window) + "*"
	if e.Manifest != "" {
		fmt.Fprintf(&b, "s3once sink: the partition %s is complete (its manifest s3://%s/%s lists %d file(s)) and this run's files for it differ from that list: ",
			where, e.Bucket, e.Manifest, e.Listed)
		switch {
		case e.AddedCount > 0:
			b.WriteString("this run would add ")
			writeKeys(&b, e.Bucket, e.Added, e.AddedCount)
			b.WriteString(", which the manifest does not list with these bytes")
			if e.Count > 0 {
				b.WriteString(", and does not write ")
				writeKeys(&b, e.Bucket, e.Keys, e.Count)
				b.WriteString(", which it lists")
			}
		default:
			b.WriteString("this run adds nothing to it, but does not write ")
			writeKeys(&b, e.Bucket, e.Keys, e.Count)
			b.WriteString(", which the manifest lists")
		}
		b.WriteString(": the run's input or settings differ from the run that wrote it; ")
	} else if e.Mixed {
		fmt.Fprintf(&b, "s3once sink: the partition %s holds %d s3once file(s) that this run did not write (", where, e.Count)
		writeKeys(&b, e.Bucket, e.Keys, e.Count)
		b.WriteString(") beside the files it committed there: the run's input or settings differ from the run that wrote them, and the partition holds files of both; ")
	} else {
		fmt.Fprintf(&b, "s3once sink: the partition %s holds %d s3once file(s) that this run does not write (", where, e.Count)
		writeKeys(&b, e.Bucket, e.Keys, e.Count)
		b.WriteString("): the run's input or settings differ from the run that wrote them, and the partition would hold files of both; ")
	}
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	if e.Mixed {
		b.WriteString("delete the partition's files and run again to replace them, or " + freshPrefix(e.Prefix) + ": ")
	} else {
		b.WriteString("delete the partition's files (and its manifest) to replace them, or " + freshPrefix(e.Prefix) + ": ")
	}
	b.WriteString(ErrPartitionChanged.Error())
	return b.String()
}

// writeKeys writes some keys as S3 URLs, and how many more there are.
func writeKeys(b *strings.Builder, bucket string, keys []string, count int) {
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("s3://" + bucket + "/" + k)
	}
	if count > len(keys) {
		fmt.Fprintf(b, ", and %d more", count-len(keys))
	}
}

func (e *PartitionChangedError) Unwrap() error { return ErrPartitionChanged }

// partitionOf is a file's partition.
type partitionOf struct{ destination, window string }

// checkPartitions looks at every partition the run writes and refuses the
// run if any holds an s3once file, of any extension, that the run does not
// produce, or has a manifest that does not list exactly the run's files of
// the partition with their sizes and CRC64NVMEs (a complete partition
// never grows or changes). A partition costs a listing (a call per 1,000
// keys) and a read of its manifest; 16 partitions at once.
func (f *barrierFn) checkPartitions(ctx context.Context, all []*barrierFile) error {
	mine := make(map[string]bool, len(all))
	parts := map[partitionOf][]*barrierFile{}
	for _, bf := range all {
		mine[bf.cr.Key] = true
		pt := partitionOf{bf.p.Result.Destination, bf.p.Result.Window}
		parts[pt] = append(parts[pt], bf)
	}
	var mu sync.Mutex
	var refused *PartitionChangedError
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for pt, files := range parts {
		g.Go(func() error {
			e, err := f.checkPartition(gctx, pt, files, mine)
			if err != nil || e == nil {
				return err
			}
			mu.Lock()
			if refused == nil || firstKey(e) < firstKey(refused) {
				refused = e
			}
			mu.Unlock()
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

// firstKey orders refusals, so that the one reported does not depend on
// which listing ended first.
func firstKey(e *PartitionChangedError) string {
	if len(e.Keys) > 0 {
		return e.Keys[0]
	}
	return e.Added[0]
}

// checkPartition judges one partition the run writes (files, all of it in
// this partition); mine holds every key of the run. The partition's
// manifest, where there is one, must list exactly the run's files, and the
// partition must hold no s3once file the run does not write (a file
// copied beside a complete partition's files among them). It returns the
// refusal, or nil.
func (f *barrierFn) checkPartition(ctx context.Context, pt partitionOf, files []*barrierFile, mine map[string]bool) (*PartitionChangedError, error) {
	prefix := ownkeys.PartitionFilePrefix(f.S.Prefix, pt.destination, pt.window)
	refusal := func() *PartitionChangedError {
		return &PartitionChangedError{Bucket: f.S.Bucket, Prefix: f.S.Prefix, Destination: pt.destination, Window: pt.window, Done: settingsRefusedDone}
	}
	extra := refusal()
	err := f.b.List(ctx, f.S.Bucket, prefix, func(page []s3bucket.Object) error {
		for _, o := range page {
			if mine[o.Key] || !ownkeys.IsPartitionFile(f.S.Prefix, pt.destination, pt.window, o.Key) ||
				(mutPartitionOwnExtOnly() && !ownkeys.HasFileExt(o.Key, f.Ext)) {
				continue
			}
			shownAdd(&extra.Keys, &extra.Count, o.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("barrier: list the partition %s: %w", prefix, err)
	}
	mkey := ownkeys.ManifestKey(f.S.Prefix, pt.destination, pt.window)
	body, found, err := f.b.ReadObject(ctx, f.S.Bucket, mkey, manifest.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("barrier: read the partition manifest s3://%s/%s: %w", f.S.Bucket, mkey, err)
	}
	if found && !mutBarrierSkipsManifest() {
		list, err := manifest.Decode(body)
		if err != nil {
			return nil, &ManifestDamagedError{Bucket: f.S.Bucket, Key: mkey, Err: err, Done: settingsRefusedDone}
		}
		if err := countsMatch(list, files); err != nil {
			return nil, &ManifestDamagedError{Bucket: f.S.Bucket, Key: mkey, Err: err, Done: settingsRefusedDone}
		}
		if e := judgeManifest(refusal(), mkey, list, files); e != nil {
			return e, nil
		}
	}
	if extra.Count > 0 {
		return extra, nil
	}
	return nil, nil
}

// shownAdd counts key in *count and keeps it in *keys while they hold
// fewer than shownKeys.
func shownAdd(keys *[]string, count *int, key string) {
	if len(*keys) < shownKeys {
		*keys = append(*keys, key)
	}
	*count++
}

// countsMatch checks the record counts of a manifest against the run's
// files of the partition: a file listed with the size and CRC64NVME of
// the run's file holds the run's records, so another count there means
// the manifest was edited outside s3once.
func countsMatch(list []manifest.Entry, files []*barrierFile) error {
	mine := make(map[string]*barrierFile, len(files))
	for _, bf := range files {
		mine[bf.cr.Key] = bf
	}
	for _, m := range list {
		bf, ok := mine[m.Key]
		if ok && m.Size == bf.cr.Size() && m.CRC64NVME == bf.cr.CRC() && m.Records != bf.p.Result.Records {
			return fmt.Errorf("it lists %s with %d records, whose bytes hold %d", m.Key, m.Records, bf.p.Result.Records)
		}
	}
	return nil
}

// judgeManifest compares a complete partition's manifest (at mkey, listing
// list) with the run's files of the partition: it returns e filled in
// where they differ, else nil.
func judgeManifest(e *PartitionChangedError, mkey string, list []manifest.Entry, files []*barrierFile) *PartitionChangedError {
	listed := make(map[string]manifest.Entry, len(list))
	for _, m := range list {
		listed[m.Key] = m
	}
	written := make(map[string]bool, len(files))
	for _, bf := range files { // sorted by key (ProcessElement)
		written[bf.cr.Key] = true
		if m, ok := listed[bf.cr.Key]; ok && m.Size == bf.cr.Size() && m.CRC64NVME == bf.cr.CRC() {
			continue
		}
		shownAdd(&e.Added, &e.AddedCount, bf.cr.Key)
	}
	for _, m := range list {
		if written[m.Key] {
			continue
		}
		shownAdd(&e.Keys, &e.Count, m.Key)
	}
	if e.AddedCount == 0 && e.Count == 0 {
		return nil
	}
	e.Manifest, e.Listed = mkey, len(list)
	return e
}

// ErrManifestDamaged is wrapped by the error of a run that finds a
// partition manifest that does not decode. Its message carries the stable
// code errcode.ManifestDamaged.
var ErrManifestDamaged = errcode.New(errcode.ManifestDamaged, "a partition manifest is damaged")

// ManifestDamagedError is a partition manifest that does not decode: it
// was cut or edited outside s3once, so what the partition holds cannot be
// judged. It wraps ErrManifestDamaged and the decoder's error.
type ManifestDamagedError struct {
	Bucket, Key string
	Err         error
	// Done says what the run did about it.
	Done string
}

func (e *ManifestDamagedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3once sink: the partition manifest s3://%s/%s is damaged (%v): it was cut or edited outside s3once, so the partition cannot be judged; ", e.Bucket, e.Key, e.Err)
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	b.WriteString("restore it, or delete the partition's files and its manifest and run again, or write to a fresh Prefix: ")
	b.WriteString(ErrManifestDamaged.Error())
	return b.String()
}

func (e *ManifestDamagedError) Unwrap() []error { return []error{ErrManifestDamaged, e.Err} }

// partitionGuard is the commit stage's check where there is no barrier
// (unbounded input, FinalizeCommit "always"). Output version 2: a file is
// committed into a partition only while the partition has no manifest, or
// when its manifest lists the file with its size and CRC64NVME (a rerun of
// a complete partition commits nothing new). Every output version: a file
// is committed into a partition only if the partition holds no s3once file
// of another extension (another format's or codec's, which can never be
// this run's). Manifests, once read, are kept: they never change; a
// partition found free of other extensions is not listed again by this
// instance.
type partitionGuard struct {
	mu        sync.Mutex
	manifests map[string]map[string]manifest.Entry // by manifest key; nil: none yet
	clean     map[string]bool                      // partition file prefixes listed and found free of other extensions
}

// checkExt refuses the file r where its partition holds an s3once file
// whose extension is not ext: one listing per partition and instance.
func (g *partitionGuard) checkExt(ctx context.Context, c folderStore, prefix string, r FileResult, ext string) error {
	at := ownkeys.PartitionFilePrefix(prefix, r.Destination, r.Window)
	g.mu.Lock()
	done := g.clean[at]
	g.mu.Unlock()
	if done {
		return nil
	}
	e := &PartitionChangedError{
		Bucket: r.Bucket, Prefix: prefix, Destination: r.Destination, Window: r.Window,
		Done: "this file was not committed; its upload is left for the sweep",
	}
	err := c.List(ctx, r.Bucket, at, func(page []s3bucket.Object) error {
		for _, o := range page {
			if !ownkeys.IsPartitionFile(prefix, r.Destination, r.Window, o.Key) || ownkeys.HasFileExt(o.Key, ext) || mutPartitionOwnExtOnly() {
				continue
			}
			shownAdd(&e.Keys, &e.Count, o.Key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list the partition %s: %w", at, err)
	}
	if e.Count > 0 {
		return e
	}
	g.mu.Lock()
	if g.clean == nil {
		g.clean = map[string]bool{}
	}
	g.clean[at] = true
	g.mu.Unlock()
	return nil
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
			return &ManifestDamagedError{Bucket: r.Bucket, Key: key, Err: err, Done: "this file was not committed; its upload is left for the sweep"}
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
		if e.Records != r.Records {
			return &ManifestDamagedError{Bucket: r.Bucket, Key: key, Done: "this file was not committed; its upload is left for the sweep",
				Err: fmt.Errorf("it lists %s with %d records, whose bytes hold %d", r.Key, e.Records, r.Records)}
		}
		return nil
	}
	return &PartitionChangedError{
		Bucket: r.Bucket, Prefix: prefix, Destination: r.Destination, Window: r.Window,
		Added: []string{r.Key}, AddedCount: 1, Manifest: key, Listed: len(entries),
		Done: "this file was not committed; its upload is left for the sweep",
	}
}
