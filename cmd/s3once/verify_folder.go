package main

// verify: what an output folder holds, judged against its manifests, its
// settings marker and its completion markers. Every S3 call goes through
// the committer (bounded, under its Policy); nothing is written.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/crc64nvme"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/settingsmarker"
)

// Problem kinds, part of verify's JSON interface.
const (
	kindNoOutput         = "no-output"              // no committed output under the prefix (files, manifests, settings marker)
	kindSettings         = "settings-unreadable"    // the settings marker does not decode, or this build cannot judge it
	kindSettingsMissing  = "settings-missing"       // manifests exist, but the settings marker written before them does not
	kindManifest         = "manifest-unreadable"    // a partition manifest does not decode
	kindManifestForeign  = "manifest-entry-foreign" // a manifest lists a key outside its partition
	kindMissing          = "file-missing"           // a manifest's file is not there
	kindChanged          = "file-changed"           // a manifest's file has other bytes (size or CRC64NVME)
	kindExtra            = "file-extra"             // an s3once file its partition's manifest does not list: a mixed partition
	kindOtherSettings    = "file-other-settings"    // (no manifest) a file named for other settings than the marker's: a mixed partition
	kindShardsMixed      = "shards-mixed"           // (no manifest) files of several shard counts, or split and unsplit, in one partition
	kindMarkerUnreadable = "marker-unreadable"      // a completion marker that lists files does not decode
	kindMarkerMissing    = "marker-file-missing"    // a completion marker lists a file that is not there, or not with its size
	kindMarkerIncomplete = "marker-incomplete"      // a completion marker leaves out files of its window (written early)
	kindUploadLeft       = "upload-left"            // an open multipart upload of s3once's under the prefix
	kindManifestMissing  = "manifest-missing"       // (output version 2) no manifest where the window's completion marker, written after every manifest of its window, exists
	kindDuplicate        = "duplicate-file"         // (no manifest) two files of one pane hold the same bytes where the sink never writes two alike: a copy
	kindUnreadable       = "file-unreadable"        // (--read) a file does not decode with its codec and format
	kindRecords          = "records-mismatch"       // (--read) a file holds another record count than its manifest records
)

// Where a partition's record count comes from (partitionReport.RecordsFrom).
const (
	recordsFromFiles    = "files"
	recordsFromManifest = "manifest, unchecked"
)

// remedyDamaged is what to do about a partition whose files were damaged.
const remedyDamaged = "the partition cannot be proved: rerun it into a fresh prefix, or delete it and run again"

// remedyMixed is what to do about a mixed partition.
const remedyMixed = "delete the partition and run again, or write to a fresh prefix"

// How a partition was checked.
const (
	byManifest = "manifest"
	byListing  = "listing"
	byReading  = "reading" // a listing, and every file read (--read)
)

// verifyOptions are verify's inputs.
type verifyOptions struct {
	bucket, prefix, staging string
	// concurrency bounds the look-ups and reads in flight.
	concurrency int
	now         time.Time
	// tableRun: the folder is a table run's (checkTableRun).
	tableRun bool
	// read: read every file of a partition without a manifest, and count
	// the records of every file a manifest lists (--read).
	read bool
}

// maxReads bounds the files held in memory at once with --read (each is
// read whole).
const maxReads = 4

// verifier checks one output folder.
type verifier struct {
	c   *s3bucket.Client
	o   verifyOptions
	rep *verifyReport

	mu sync.Mutex // guards rep's lists while look-ups run

	// ext is the files' extension from the settings marker; extKnown is
	// false where no marker gives it (output version 1).
	ext      string
	extKnown bool
	// shards is the marker's Shards (0: unknown, or automatic sharding).
	shards int
	// autoMax is the bound of automatic sharding (the marker's "auto:N"),
	// 0 for fixed Shards: a partition's files then share one count of at
	// most autoMax.
	autoMax int
	// format and codec are the marker's Format and Compression ("" where
	// it gives none): how verify --read decodes files of its extension.
	format, codec string
	// maxFileRecords is the marker's MaxFileRecords (0: no limit, or no
	// marker): a file of one record repeated that many times is full, so
	// another such file after it in its shard is the sink's.
	maxFileRecords int64
	// settingsUnread: the marker could not be read (an S3 error).
	settingsUnread bool
	// reads holds a slot per file being read (--read).
	reads chan struct{}
	// sizes holds every listed key under the prefix (staging excluded).
	sizes map[string]int64
	parts map[partKey]*partition
	// markers are the completion markers listed.
	markers []string
	// noOutput: no file, manifest or settings marker of s3once's is under
	// the prefix (reported once the uploads are listed: noOutputProblem).
	noOutput bool
}

type partKey struct{ dest, window string }

// partition is what the listing found of one (destination, window).
type partition struct {
	manifest string // key, "" where none was listed
	files    []fileName
	// named are the keys of the partition's file-name shape that cannot be
	// this folder's files (unless its manifest lists them).
	named []namedLike
	// listed holds the keys its manifest lists, once read (nil: none read).
	listed map[string]bool
	// counted is how many of its manifest's files had their records
	// counted from their bytes (--read), under the verifier's lock.
	counted int
}

// fileName is an s3once-shaped key taken apart.
type fileName struct {
	key                  string
	size                 int64
	pane                 int64
	shard, shards        int
	subBatch, subBatches int // 0, 1 where the shard was not split
	file                 int
	ext                  string
}

// verifyFolder checks the folder and returns the report, its outcome set.
// What could not be checked (an S3 call that kept failing, a cancelled
// context) is in the report's Unverified list.
func verifyFolder(ctx context.Context, c *s3bucket.Client, o verifyOptions) *verifyReport {
	v := &verifier{
		c: c, o: o,
		rep: &verifyReport{
			Bucket: o.bucket, Prefix: o.prefix, StagingPrefix: o.staging, CheckedAt: o.now,
			Settings: settingsReport{Key: ownkeys.SettingsKey(o.prefix)},
		},
		sizes: map[string]int64{}, parts: map[partKey]*partition{},
		reads: make(chan struct{}, min(o.concurrency, maxReads)),
	}
	v.rep.Read = o.read
	v.readSettings(ctx)
	if !v.list(ctx) {
		return v.finish()
	}
	v.checkPartitions(ctx)
	v.checkMarkers(ctx)
	v.checkUploads(ctx)
	if v.noOutput {
		v.problem(v.noOutputProblem())
	}
	if o.tableRun {
		v.checkTableRun(ctx)
	}
	return v.finish()
}

func (v *verifier) problem(p problem) {
	v.mu.Lock()
	v.rep.Problems = append(v.rep.Problems, p)
	v.mu.Unlock()
}

// named reports keys named like s3once's files.
func (v *verifier) named(n ...namedLike) {
	v.mu.Lock()
	v.rep.NamedLikeS3once = append(v.rep.NamedLikeS3once, n...)
	v.mu.Unlock()
}

func (v *verifier) unverified(key string, err error) {
	v.mu.Lock()
	v.rep.Unverified = append(v.rep.Unverified, unverified{Key: key, Error: err.Error()})
	v.mu.Unlock()
}

// ---- the settings marker ---------------------------------------------------

// readSettings reads and judges the settings marker.
func (v *verifier) readSettings(ctx context.Context) {
	sr := &v.rep.Settings
	// One byte over the marker's bound, so that a marker just over it is
	// refused by its decoder (a problem); a far larger object fails the
	// read (unverified).
	body, found, err := v.c.ReadObject(ctx, v.o.bucket, sr.Key, settingsmarker.MaxBytes+1)
	if err != nil {
		v.settingsUnread = true
		v.unverified(sr.Key, err)
		return
	}
	if !found {
		return
	}
	sr.Found = true
	bad := func(format string, args ...any) {
		sr.Error = fmt.Sprintf(format, args...)
		v.problem(problem{Kind: kindSettings, Key: sr.Key, Message: sr.Error})
	}
	fp, err := settingsmarker.Decode(body)
	if err != nil {
		bad("the settings marker does not decode (%v): written by a later s3once (use a newer s3once to verify) or damaged (compare it with the settings the pipeline runs with)", err)
		return
	}
	// A marker that decodes but lacks a setting every marker of its
	// version holds (cut at a line boundary, its header line only) records
	// nothing this check can trust: damaged, never "no marker".
	if err := settingsmarker.Check(fp); err != nil {
		d := &settingsmarker.DamagedError{}
		if !errors.As(err, &d) {
			bad("the settings marker s3://%s/%s: %v", v.o.bucket, sr.Key, err)
			return
		}
		bad("the settings marker s3://%s/%s %s; %s: %v", v.o.bucket, sr.Key, d.Damage(), settingsmarker.Hint, settingsmarker.ErrDamaged)
		return
	}
	sr.OutputVersion, _ = fp.Get("output-version") // every marker records it
	if sr.OutputVersion != "1" && sr.OutputVersion != "2" {
		bad("the settings marker records output version %q, which this s3once does not know (it knows 1 and 2): use a newer s3once to verify", sr.OutputVersion)
		return
	}
	names, _ := fp.Get("file-names")
	ext, ok := ownkeys.FileNamesExt(names)
	if !ok {
		bad("the settings marker's file-names %q is not a file-name template this s3once knows: use a newer s3once to verify", names)
		return
	}
	v.ext, v.extKnown, sr.Extension = ext, true, ext
	v.format, _ = fp.Get("format")
	v.codec, _ = fp.Get("compression")
	if s, ok := fp.Get("max-file-records"); ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			v.maxFileRecords = n
		}
	}
	if s, ok := fp.Get("shards"); ok {
		if bound, auto := strings.CutPrefix(s, "auto:"); auto {
			if n, err := strconv.Atoi(bound); err == nil && n > 0 {
				v.autoMax, sr.AutoMaxShards = n, n
			}
		} else if n, err := strconv.Atoi(s); err == nil && n > 0 {
			v.shards, sr.Shards = n, n
		}
	}
}

// shardsDisagree says what the settings marker records when a file named
// for n shards cannot be of this folder ("" when it can): another fixed
// count, or more than automatic sharding's bound.
func (v *verifier) shardsDisagree(n int) string {
	switch {
	case v.shards > 0 && n != v.shards:
		return strconv.Itoa(v.shards)
	case v.autoMax > 0 && n > v.autoMax:
		return fmt.Sprintf("automatic sharding of at most %d", v.autoMax)
	}
	return ""
}

// ---- the listing ---------------------------------------------------------

// list reads every key under the prefix and sorts them into partitions;
// false where the listing failed.
func (v *verifier) list(ctx context.Context) bool {
	folder := ownkeys.Folder(v.o.prefix)
	stagingFolder := ownkeys.Folder(v.o.staging)
	err := v.c.List(ctx, v.o.bucket, folder, func(page []s3bucket.Object) error {
		for _, o := range page {
			k := o.Key
			if ownkeys.Overlap(v.o.prefix, v.o.staging) && strings.HasPrefix(k, stagingFolder) {
				continue // the writers' side objects and probes
			}
			v.sizes[k] = o.Size
			switch {
			case ownkeys.IsSettings(v.o.prefix, k):
			case ownkeys.IsMarker(v.o.prefix, k):
				v.markers = append(v.markers, k)
			case ownkeys.IsManifest(v.o.prefix, k):
				d, w, _ := ownkeys.ParseManifestKey(v.o.prefix, k)
				v.partition(d, w).manifest = k
			default:
				d, w, ok := ownkeys.ParseFileKey(v.o.prefix, k)
				if !ok {
					v.rep.OtherKeys++
					continue
				}
				p := v.partition(d, w)
				n, why := v.fileName(k, o.Size, w)
				if why != "" {
					p.named = append(p.named, namedLike{Key: k, Size: o.Size, Reason: why})
					continue
				}
				p.files = append(p.files, n)
			}
		}
		return nil
	})
	if err != nil {
		v.unverified(folder, fmt.Errorf("list s3://%s/%s (check the bucket, the credentials and the endpoint, then run again): %w", v.o.bucket, folder, err))
		return false
	}
	return true
}

func (v *verifier) partition(dest, window string) *partition {
	k := partKey{dest, window}
	p := v.parts[k]
	if p == nil {
		p = &partition{}
		v.parts[k] = p
	}
	return p
}

// fileTail is what follows "<window>-pane-" in a file name.
var fileTail = regexp.MustCompile(`^([0-9]+)-shard-([0-9]{5,})-of-([0-9]{5,})(?:-batch-([0-9]{2,})-of-([0-9]{2,}))?-file-([0-9]{5,})(.*)$`)

// fileName takes an s3once-shaped key of window apart. why is not empty
// where the key cannot be one of s3once's files: numbers s3once does not
// write. A file of another extension than the settings marker's is a file
// of its partition all the same (extDisagree), as the sink's partition
// check counts it: another run's.
func (v *verifier) fileName(key string, size int64, window string) (n fileName, why string) {
	base := key[strings.LastIndexByte(key, '/')+1:]
	m := fileTail.FindStringSubmatch(base[len(window)+len("-pane-"):])
	if m == nil {
		return n, "not an s3once file name" // IsFileName took it: not reached
	}
	num := func(s string, width int) (int64, bool) {
		x, err := strconv.ParseInt(s, 10, 64)
		pad := strconv.FormatInt(x, 10)
		if len(pad) < width {
			pad = strings.Repeat("0", width-len(pad)) + pad
		}
		return x, err == nil && pad == s
	}
	n = fileName{key: key, size: size, subBatches: 1, ext: m[7]}
	pane, ok1 := num(m[1], 1)
	shard, ok2 := num(m[2], 5)
	shards, ok3 := num(m[3], 5)
	file, ok4 := num(m[6], 5)
	ok := ok1 && ok2 && ok3 && ok4 && shard < shards && shards <= 1<<20 && file < 1<<30
	n.pane, n.shard, n.shards, n.file = pane, int(shard), int(shards), int(file)
	if m[4] != "" {
		sub, ok5 := num(m[4], 2)
		subs, ok6 := num(m[5], 2)
		ok = ok && ok5 && ok6 && subs > 1 && sub < subs && subs <= 1<<20
		n.subBatch, n.subBatches = int(sub), int(subs)
	}
	if !ok {
		return n, "its numbers are not as s3once writes them (padding, or a shard or sub-batch past its count)"
	}
	return n, ""
}

// extDisagree says why a file's extension cannot be this folder's ("" where
// it can, or where no settings marker says).
func (v *verifier) extDisagree(n fileName) string {
	if v.extKnown && n.ext != v.ext {
		return fmt.Sprintf("its extension %q is not this folder's %q (from the settings marker)", n.ext, v.ext)
	}
	return ""
}

// ---- partitions ----------------------------------------------------------

func (v *verifier) checkPartitions(ctx context.Context) {
	keys := make([]partKey, 0, len(v.parts))
	for k := range v.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b partKey) int {
		return cmp.Or(strings.Compare(a.dest, b.dest), strings.Compare(a.window, b.window))
	})
	hasFiles := false
	for _, k := range keys {
		hasFiles = hasFiles || len(v.parts[k].files) > 0 || v.parts[k].manifest != ""
	}
	if !hasFiles && !v.rep.Settings.Found {
		v.noOutput = true
		return
	}
	if !v.rep.Settings.Found && !v.settingsUnread {
		for _, k := range keys {
			if m := v.parts[k].manifest; m != "" {
				v.problem(problem{Kind: kindSettingsMissing, Key: v.rep.Settings.Key,
					Message: fmt.Sprintf("partition manifests (such as %s) exist, so a settings marker was written before them, but it is not there: it was deleted outside s3once, and a rerun with other settings would no longer be refused; restore it, or write to a fresh prefix", m)})
				break
			}
		}
	}
	// Manifests are read on one group, their files looked up on another, so
	// that a manifest's reader waiting for a look-up slot never holds the
	// slot a look-up needs.
	var manifests, lookups errgroup.Group
	manifests.SetLimit(v.o.concurrency)
	lookups.SetLimit(v.o.concurrency)
	for _, k := range keys {
		p := v.parts[k]
		if len(p.files) == 0 && p.manifest == "" {
			v.named(p.named...)
			continue // only keys named like s3once's: no partition of s3once's
		}
		pr := &partitionReport{Destination: k.dest, Window: k.window, Manifest: p.manifest, Files: len(p.files)}
		v.rep.Partitions = append(v.rep.Partitions, pr)
		if p.manifest != "" {
			pr.CheckedBy = byManifest
			manifests.Go(func() error {
				v.checkByManifest(ctx, &lookups, k, p, pr)
				return nil
			})
			continue
		}
		pr.CheckedBy = byListing
		if v.o.read {
			pr.CheckedBy = byReading
		}
		v.named(p.named...)
		v.checkByListing(k, p, pr)
		manifests.Go(func() error {
			v.checkWithoutManifest(ctx, &lookups, k, p, pr)
			return nil
		})
	}
	_ = manifests.Wait() // every read and look-up reports its own failure
	_ = lookups.Wait()
	for _, pr := range v.rep.Partitions {
		p := v.parts[partKey{pr.Destination, pr.Window}]
		switch {
		case p.listed == nil: // no manifest, or one that could not be read
		case v.o.read && p.counted == pr.Entries:
			pr.RecordsFrom = recordsFromFiles
		default:
			pr.RecordsFrom = recordsFromManifest
		}
	}
}

// checkWithoutManifest judges a partition that has no manifest, beyond the
// names (checkByListing). What proves it:
//
//   - In an output-version-2 folder, where the window's completion marker
//     exists, the manifest was written before it: its absence is a problem
//     (manifest-missing). Without the marker, the run may not have
//     finished (or no marker is configured): the partition is unverified,
//     in every mode.
//   - A listing proves names and sizes, not bytes: without --read the
//     partition is unverified. With --read every file is read and decoded
//     with its codec and format (a file that does not decode is a problem;
//     one verify cannot decode leaves the partition unverified).
//   - Two files of one pane with the same bytes (size and CRC64NVME: from
//     the read, or else from a HEAD of each file whose pane and size it
//     shares with another) are a copy where the sink never writes two
//     alike: a record lies in one shard and one sub-batch of its pane (a
//     hash of the record picks them), and a shard's sorted records are cut
//     into files in order, so two files alike in one shard hold one record
//     repeated. Files alike in two shards or sub-batches are a problem;
//     in one shard, a problem where --read counted several distinct
//     records, proved where each holds one record repeated as many times
//     as the marker's MaxFileRecords (a full file), and unverified
//     otherwise (a copy of the shard's last file cannot be told from a
//     file rolled by MaxFileBytes).
func (v *verifier) checkWithoutManifest(ctx context.Context, lookups *errgroup.Group, k partKey, p *partition, pr *partitionReport) {
	markerKey := ownkeys.MarkerKey(v.o.prefix, k.window, 0)
	_, marked := v.sizes[markerKey]
	partKey := ownkeys.PartitionFilePrefix(v.o.prefix, k.dest, k.window)
	how := "; a listing proves the files' names and sizes, not their bytes: verify --read reads them"
	if v.o.read {
		how = "; every file read (--read)"
	}
	switch {
	case mutVerifyTrustsListing():
		pr.Note = "no manifest: checked by a listing"
	case !v.rep.Settings.Found:
		pr.Note = "no manifest and no settings marker: an output-version-1 folder (an earlier release), checked by a listing" + how
	case v.rep.Settings.OutputVersion == "1":
		pr.Note = "no manifest: output version 1 keeps none; checked by a listing and the settings marker" + how
	case marked:
		pr.Note = fmt.Sprintf("no manifest, though its window's completion marker %s, written after every manifest of the window, exists", markerKey)
		v.problem(problem{Kind: kindManifestMissing, Destination: k.dest, Window: k.window, Key: ownkeys.ManifestKey(v.o.prefix, k.dest, k.window),
			Message: fmt.Sprintf("the partition has no manifest, though its window's completion marker %s exists, which the sink writes after every manifest of the window: the manifest was deleted outside s3once, and the partition's files cannot be proved; rerun the partition into a fresh prefix", markerKey)})
	default:
		pr.Note = "no manifest, and no completion marker for its window: the run may not have finished (or its window not expired), or a rerun found files of two runs there and wrote no manifest (its error names them); checked by a listing and the settings marker" + how
		v.unverified(partKey, errors.New("no manifest and no completion marker for its window: the run may not have finished, or a rerun found files of two runs there and wrote no manifest (its error names them); verify again once the run has finished (where no completion marker is configured, verify cannot prove a window complete)"))
	}
	if !v.o.read && (!v.rep.Settings.Found || v.rep.Settings.OutputVersion == "1") && !mutVerifyTrustsListing() {
		v.unverified(partKey, errors.New("no manifest: a listing cannot prove the files' bytes (a file replaced with other bytes of its size, or copied to another name, looks the same); run verify --read to read every file"))
	}
	type got struct {
		crc      uint64
		have     bool // crc is known
		content  fileContent
		readable bool // read and decoded (--read)
	}
	gots := make([]got, len(p.files))
	type paneSize struct{ pane, size int64 }
	shared := map[paneSize]int{}
	for _, f := range p.files {
		shared[paneSize{f.pane, f.size}]++
	}
	var wg sync.WaitGroup
	for i, f := range p.files {
		if !v.o.read && shared[paneSize{f.pane, f.size}] < 2 {
			continue
		}
		wg.Add(1)
		lookups.Go(func() error {
			defer wg.Done()
			if v.o.read {
				crc, c, err := v.readFile(ctx, f.key, f.ext, f.size)
				switch {
				case err == nil:
					gots[i] = got{crc: crc, have: true, content: c, readable: true}
				case errors.Is(err, errFormatUnknown):
					gots[i] = got{crc: crc, have: true}
					v.unverified(f.key, fmt.Errorf("%w: its bytes are unchecked, and the partition has no manifest to prove them", err))
				case errors.Is(err, errNotRead):
					v.unverified(f.key, err)
				default:
					gots[i] = got{crc: crc, have: true}
					v.problem(problem{Kind: kindUnreadable, Destination: k.dest, Window: k.window, Key: f.key,
						Message: fmt.Sprintf("the file does not decode (%v): cut short, or replaced outside s3once; %s", err, remedyDamaged)})
				}
				return nil
			}
			h, err := v.lookup(ctx, f.key, f.size)
			switch {
			case err != nil:
				v.unverified(f.key, err)
			case !h.Exists || !h.HaveCRC || h.Size != f.size:
				v.unverified(f.key, fmt.Errorf("listed with %d bytes, then found %s: run verify again", f.size, h))
			default:
				gots[i] = got{crc: h.CRC, have: true}
			}
			return nil
		})
	}
	wg.Wait()
	if v.o.read {
		var total int64
		all := len(p.files) > 0
		for _, g := range gots {
			total += g.content.records
			all = all && g.content.counted
		}
		if all {
			pr.Records, pr.RecordsFrom = total, recordsFromFiles
		}
	}
	type alike struct {
		pane, size int64
		crc        uint64
	}
	first := map[alike]int{}
	for i, f := range p.files {
		if !gots[i].have {
			continue
		}
		a := alike{f.pane, f.size, gots[i].crc}
		j, ok := first[a]
		if !ok {
			first[a] = i
			continue
		}
		o := p.files[j]
		sameBatch := o.shard == f.shard && o.shards == f.shards && o.subBatch == f.subBatch && o.subBatches == f.subBatches
		c := gots[i].content
		dup := func(why string) {
			v.problem(problem{Kind: kindDuplicate, Destination: k.dest, Window: k.window, Key: f.key,
				Message: fmt.Sprintf("the same bytes as %s (%d bytes, CRC64NVME %016x): %s, so one of them is a copy made outside s3once; %s", o.key, f.size, gots[i].crc, why, remedyDamaged)})
		}
		switch {
		case !sameBatch:
			dup("a record of a pane lies in one shard and one sub-batch only, and these two files are of two")
		case gots[i].readable && c.counted && !c.oneRecord:
			dup(fmt.Sprintf("they hold %d records, not one record repeated, and the sink cuts a shard's sorted records into files in order", c.records))
		case gots[i].readable && c.counted && v.maxFileRecords > 0 && c.records == v.maxFileRecords:
			// One record repeated, a full file of it: two files of one
			// shard hold that when the record fills more than one.
		case gots[i].readable && c.counted:
			// One record repeated, but not a full file of it by the
			// marker's MaxFileRecords (or no limit is known): a file
			// rolled by MaxFileBytes, or the shard's last file copied to
			// the next index, which verify cannot tell apart.
			v.unverified(f.key, fmt.Errorf("the same bytes as %s, in the same shard, %d records of one record repeated: two files the sink rolled by MaxFileBytes, or its last file copied to the next index; verify cannot tell them apart without a manifest", o.key, c.records))
		default:
			v.unverified(f.key, fmt.Errorf("the same bytes as %s, in the same shard: a copy, or two files of one record repeated; verify cannot tell without counting its records (--read, for text and JSON Lines)", o.key))
		}
	}
}

// errNotRead: a file could not be read (an S3 call failed).
var errNotRead = errors.New("could not read the file")

// readFile reads a file of extension ext and size bytes whole (holding one
// of the read slots) and decodes it: crc is the bytes' CRC64NVME, err a
// failure to decode (errFormatUnknown where verify does not know its codec
// or format), or errNotRead.
func (v *verifier) readFile(ctx context.Context, key, ext string, size int64) (crc uint64, c fileContent, err error) {
	select {
	case v.reads <- struct{}{}:
	case <-ctx.Done():
		return 0, c, fmt.Errorf("%w: %w", errNotRead, ctx.Err())
	}
	defer func() { <-v.reads }()
	body, found, err := v.c.ReadObject(ctx, v.o.bucket, key, size)
	switch {
	case err != nil:
		return 0, c, fmt.Errorf("%w: %w (run verify again)", errNotRead, err)
	case !found:
		return 0, c, fmt.Errorf("%w: listed, then not found (run verify again)", errNotRead)
	case int64(len(body)) != size:
		return 0, c, fmt.Errorf("%w: listed with %d bytes, read %d: it changed (run verify again)", errNotRead, size, len(body))
	}
	crc = crc64nvme.Checksum(body)
	c, err = readContent(body, kindOf(ext, v.ext, v.format, v.codec))
	return crc, c, err
}

// checkByManifest reads the partition's manifest and looks up every file it
// lists, concurrently on lookups; a listed s3once file it does not list
// makes the partition mixed. It touches only its partition's p and pr, and
// the report through v's lock.
func (v *verifier) checkByManifest(ctx context.Context, lookups *errgroup.Group, k partKey, p *partition, pr *partitionReport) {
	body, found, err := v.c.ReadObject(ctx, v.o.bucket, p.manifest, manifest.MaxBytes)
	if err == nil && !found {
		err = errors.New("listed, then not found: read again")
	}
	if err != nil {
		v.named(p.named...)
		v.unverified(p.manifest, err)
		return
	}
	entries, err := manifest.Decode(body)
	if err != nil {
		v.named(p.named...)
		v.problem(problem{Kind: kindManifest, Destination: k.dest, Window: k.window, Key: p.manifest,
			Message: fmt.Sprintf("the partition manifest does not decode (%v): it was changed outside s3once; the partition's files cannot be proved", err)})
		return
	}
	listed := make(map[string]bool, len(entries))
	for _, e := range entries {
		listed[e.Key] = true
		pr.Records += e.Records
		pr.Bytes += e.Size
	}
	pr.Entries = len(entries)
	p.listed = listed
	for _, n := range p.named {
		if !listed[n.Key] {
			v.named(n)
		}
	}
	for _, f := range p.files {
		if listed[f.key] {
			continue
		}
		pr.Mixed = true
		v.problem(problem{Kind: kindExtra, Destination: k.dest, Window: k.window, Key: f.key,
			Message: fmt.Sprintf("an s3once file that the partition's manifest %s does not list: the partition is mixed (it holds another run's files); %s", p.manifest, remedyMixed)})
	}
	for _, e := range entries {
		if !ownkeys.IsPartitionFile(v.o.prefix, k.dest, k.window, e.Key) {
			v.problem(problem{Kind: kindManifestForeign, Destination: k.dest, Window: k.window, Key: e.Key,
				Message: fmt.Sprintf("the manifest %s lists a key that is not a file of its partition", p.manifest)})
			continue
		}
		n, why := v.fileName(e.Key, e.Size, k.window)
		if why == "" {
			why = v.extDisagree(n)
		}
		switch {
		case why != "":
			v.problem(problem{Kind: kindOtherSettings, Destination: k.dest, Window: k.window, Key: e.Key,
				Message: fmt.Sprintf("the manifest %s lists a file that cannot be this folder's: %s; the files and the settings marker disagree", p.manifest, why)})
		case v.shardsDisagree(n.shards) != "":
			v.problem(problem{Kind: kindOtherSettings, Destination: k.dest, Window: k.window, Key: e.Key,
				Message: fmt.Sprintf("the manifest %s lists a file named for %d shards where the settings marker records %s: the files and the settings marker disagree", p.manifest, n.shards, v.shardsDisagree(n.shards))})
		}
		lookups.Go(func() error {
			h, err := v.lookup(ctx, e.Key, e.Size)
			switch {
			case err != nil:
				v.unverified(e.Key, err)
			case !h.Exists:
				v.problem(problem{Kind: kindMissing, Destination: k.dest, Window: k.window, Key: e.Key,
					Message: fmt.Sprintf("listed in the manifest %s (%d bytes, CRC64NVME %016x) but not there: deleted outside s3once; the partition is incomplete", p.manifest, e.Size, e.CRC64NVME)})
			case !h.Is(e.Size, e.CRC64NVME):
				v.problem(problem{Kind: kindChanged, Destination: k.dest, Window: k.window, Key: e.Key,
					Message: fmt.Sprintf("the manifest %s lists %d bytes with CRC64NVME %016x; the key holds %s: overwritten outside s3once", p.manifest, e.Size, e.CRC64NVME, h)})
			case v.o.read:
				v.countRecords(ctx, k, p, e, n.ext)
			}
			return nil
		})
	}
}

// countRecords reads a file its manifest lists and compares its record
// count with the manifest's (--read). A format whose records verify cannot
// count leaves the manifest's count unchecked.
func (v *verifier) countRecords(ctx context.Context, k partKey, p *partition, e manifest.Entry, ext string) {
	crc, c, err := v.readFile(ctx, e.Key, ext, e.Size)
	switch {
	case errors.Is(err, errNotRead):
		v.unverified(e.Key, err)
	case errors.Is(err, errFormatUnknown):
	case crc != e.CRC64NVME:
		v.unverified(e.Key, fmt.Errorf("read with CRC64NVME %016x where the manifest %s records %016x: it changed after its look-up (run verify again)", crc, p.manifest, e.CRC64NVME))
	case err != nil:
		v.problem(problem{Kind: kindUnreadable, Destination: k.dest, Window: k.window, Key: e.Key,
			Message: fmt.Sprintf("the file its manifest %s lists, with its bytes, does not decode (%v): the sink did not write it so; %s", p.manifest, err, remedyDamaged)})
	case !c.counted:
	case c.records != e.Records && !mutVerifyTrustsCounts():
		v.problem(problem{Kind: kindRecords, Destination: k.dest, Window: k.window, Key: e.Key,
			Message: fmt.Sprintf("the file holds %d records where its manifest %s records %d: the manifest was changed outside s3once, so its counts cannot be trusted; %s", c.records, p.manifest, e.Records, remedyDamaged)})
	default:
		v.mu.Lock()
		p.counted++
		v.mu.Unlock()
	}
}

// lookup tells what key holds (s3bucket.Client.Lookup, under lookupBound; size
// < 0 never reads back).
func (v *verifier) lookup(ctx context.Context, key string, size int64) (s3bucket.Holding, error) {
	ctx, cancel := context.WithTimeout(ctx, v.lookupBound(max(size, 0)))
	defer cancel()
	return v.c.Lookup(ctx, v.o.bucket, key, size)
}

// lookupBound bounds one file's Lookup: its HEAD under the client's
// Policy, then, where the server keeps no CRC64NVME, each read-back at
// s3call.CallTimeout(size) (1 MiB/s after the base bound) and a backoff.
// The client bounds the read-back by its context alone.
func (v *verifier) lookupBound(size int64) time.Duration {
	o := v.c.Options()
	head := s3call.Policy{CallTimeout: o.CallTimeout, Attempts: o.MaxAttempts, BaseBackoff: o.BaseBackoff, MaxBackoff: o.MaxBackoff}
	return head.WorstCase() + time.Duration(o.MaxAttempts)*(s3call.CallTimeout(size)+o.MaxBackoff)
}

// checkByListing judges a partition without a manifest by its names: every
// file is named for the marker's Shards, and no shard is named both split
// and unsplit (or split two ways) within a pane.
func (v *verifier) checkByListing(k partKey, p *partition, pr *partitionReport) {
	counts := map[int]bool{}
	type paneShard struct {
		pane  int64
		shard int
	}
	splits := map[paneShard]map[int]string{} // sub-batch count -> a key
	exts := map[string]string{}              // extension -> a key
	for _, f := range p.files {
		pr.Bytes += f.size
		counts[f.shards] = true
		if _, ok := exts[f.ext]; !ok {
			exts[f.ext] = f.key
		}
		if why := v.extDisagree(f); why != "" {
			pr.Mixed = true
			v.problem(problem{Kind: kindOtherSettings, Destination: k.dest, Window: k.window, Key: f.key,
				Message: fmt.Sprintf("an s3once file of another run: %s, so the partition is mixed; %s", why, remedyMixed)})
		} else if want := v.shardsDisagree(f.shards); want != "" {
			pr.Mixed = true
			v.problem(problem{Kind: kindOtherSettings, Destination: k.dest, Window: k.window, Key: f.key,
				Message: fmt.Sprintf("named for %d shards where the settings marker records %s: another run's file, so the partition is mixed; %s", f.shards, want, remedyMixed)})
		}
		ps := paneShard{f.pane, f.shard}
		if splits[ps] == nil {
			splits[ps] = map[int]string{}
		}
		if _, ok := splits[ps][f.subBatches]; !ok {
			splits[ps][f.subBatches] = f.key
		}
	}
	if !v.extKnown && len(exts) > 1 {
		pr.Mixed = true
		names := slices.Sorted(maps.Keys(exts))
		examples := make([]string, 0, len(names))
		for _, e := range names {
			examples = append(examples, exts[e])
		}
		v.problem(problem{Kind: kindOtherSettings, Destination: k.dest, Window: k.window, Key: ownkeys.PartitionFilePrefix(v.o.prefix, k.dest, k.window),
			Message: fmt.Sprintf("s3once files of %d extensions (%s; such as %s) in one partition: files of two runs with another Format or Compression; %s", len(names), strings.Join(names, ", "), strings.Join(examples, ", "), remedyMixed)})
	}
	if v.shards == 0 && len(counts) > 1 {
		pr.Mixed = true
		ns := make([]int, 0, len(counts))
		for n := range counts {
			ns = append(ns, n)
		}
		slices.Sort(ns)
		v.problem(problem{Kind: kindShardsMixed, Destination: k.dest, Window: k.window, Key: ownkeys.PartitionFilePrefix(v.o.prefix, k.dest, k.window),
			Message: fmt.Sprintf("files named for %v shards in one partition: files of two runs; %s", ns, remedyMixed)})
	}
	shardKeys := make([]paneShard, 0, len(splits))
	for ps := range splits {
		shardKeys = append(shardKeys, ps)
	}
	slices.SortFunc(shardKeys, func(a, b paneShard) int { return cmp.Or(cmp.Compare(a.pane, b.pane), cmp.Compare(a.shard, b.shard)) })
	for _, ps := range shardKeys {
		ways := splits[ps]
		if len(ways) < 2 {
			continue
		}
		pr.Mixed = true
		examples := make([]string, 0, len(ways))
		for _, key := range ways {
			examples = append(examples, key)
		}
		slices.Sort(examples)
		v.problem(problem{Kind: kindShardsMixed, Destination: k.dest, Window: k.window, Key: examples[0],
			Message: fmt.Sprintf("pane %d, shard %d is named split in %d ways (%s): files of two runs; %s", ps.pane, ps.shard, len(ways), strings.Join(examples, ", "), remedyMixed)})
	}
	if !pr.Mixed { // a mixed partition is wrong already; its numbers mean nothing
		v.checkNumbering(k, p)
	}
}

// checkNumbering finds the files missing between others: the writer
// numbers the files of one batch (a pane, shard and sub-batch) from 0 up,
// with no gap, so a number absent below the highest one found is a file
// deleted outside s3once. (A batch's last file deleted leaves no gap:
// without a manifest nothing tells it was there.)
func (v *verifier) checkNumbering(k partKey, p *partition) {
	type batchOf struct {
		pane                     int64
		shard, shards, sub, subs int
		ext                      string
	}
	numbers := map[batchOf][]int{}
	sample := map[batchOf]string{}
	for _, f := range p.files {
		b := batchOf{f.pane, f.shard, f.shards, f.subBatch, f.subBatches, f.ext}
		numbers[b] = append(numbers[b], f.file)
		sample[b] = f.key
	}
	// numbered names the file n of the batch whose file key is like.
	numbered := func(like string, n int) string {
		i := strings.LastIndex(like, "-file-") + len("-file-")
		j := i
		for j < len(like) && like[j] >= '0' && like[j] <= '9' {
			j++
		}
		return like[:i] + fmt.Sprintf("%05d", n) + like[j:]
	}
	for b, ns := range numbers {
		slices.Sort(ns)
		next := 0
		for _, n := range ns {
			for ; next < n; next++ {
				key := numbered(sample[b], next)
				v.problem(problem{Kind: kindMissing, Destination: k.dest, Window: k.window, Key: key,
					Message: fmt.Sprintf("not there, though the same batch holds file %05d: the writer numbers a batch's files from 0 without a gap, so it was deleted outside s3once; the partition is incomplete; rerun it into a fresh prefix", ns[len(ns)-1])})
			}
			next = n + 1
		}
	}
}

// ---- completion markers --------------------------------------------------

// markerLine is what verify reads of a completion marker's line (the
// sink's FileResult).
type markerLine struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Bytes  *int64 `json:"bytes"`
}

// checkMarkers reads each completion marker; one that lists files must
// list only files that are there, with their sizes, and every file of its
// window's panes that it lists (else it was written early).
func (v *verifier) checkMarkers(ctx context.Context) {
	slices.Sort(v.markers)
	// A window's files: its manifests' where a partition has one (a file
	// beside them is reported as extra), else its listed files.
	byWindow := map[string][]fileName{}
	for k, p := range v.parts {
		for _, f := range p.files {
			if p.listed == nil || p.listed[f.key] {
				byWindow[k.window] = append(byWindow[k.window], f)
			}
		}
	}
	for _, key := range v.markers {
		v.rep.CompletionMarkers = append(v.rep.CompletionMarkers, v.checkMarker(ctx, key, byWindow))
	}
}

func (v *verifier) checkMarker(ctx context.Context, key string, byWindow map[string][]fileName) markerReport {
	mr := markerReport{Key: key}
	body, found, err := v.c.ReadObject(ctx, v.o.bucket, key, manifest.MaxBytes)
	if err == nil && !found {
		err = errors.New("listed, then not found: read again")
	}
	if err != nil {
		v.unverified(key, err)
		return mr
	}
	if len(body) == 0 { // an empty marker: _SUCCESS alone
		return mr
	}
	window, pane := markerWindow(v.o.prefix, key)
	paneOf := make(map[string]int64, len(byWindow[window]))
	for _, f := range byWindow[window] {
		paneOf[f.key] = f.pane
	}
	listed := map[string]bool{}
	panes := map[int64]bool{pane: true}
	for n, line := range bytes.Split(bytes.TrimSuffix(body, []byte{'\n'}), []byte{'\n'}) {
		var l markerLine
		if err := json.Unmarshal(line, &l); err != nil || l.Key == "" || l.Bytes == nil {
			why := "no key or bytes"
			if err != nil {
				why = err.Error()
			}
			v.problem(problem{Kind: kindMarkerUnreadable, Key: key,
				Message: fmt.Sprintf("line %d of the completion marker is not a file's result (%s): it was changed outside s3once", n+1, why)})
			return mr
		}
		mr.Files++
		listed[l.Key] = true
		if p, ok := paneOf[l.Key]; ok {
			panes[p] = true
		}
		size, ok := v.sizes[l.Key]
		switch {
		case l.Bucket != v.o.bucket:
			v.problem(problem{Kind: kindMarkerMissing, Key: key,
				Message: fmt.Sprintf("the completion marker lists s3://%s/%s, in another bucket", l.Bucket, l.Key)})
		case !ok:
			v.problem(problem{Kind: kindMarkerMissing, Key: key,
				Message: fmt.Sprintf("the completion marker lists %s, which is not there (or lies outside the prefix): deleted outside s3once", l.Key)})
		case size != *l.Bytes:
			v.problem(problem{Kind: kindMarkerMissing, Key: key,
				Message: fmt.Sprintf("the completion marker lists %s with %d bytes; it holds %d: overwritten outside s3once", l.Key, *l.Bytes, size)})
		}
	}
	var unlisted []string
	for _, f := range byWindow[window] {
		if panes[f.pane] && !listed[f.key] {
			unlisted = append(unlisted, f.key)
		}
	}
	if len(unlisted) > 0 {
		slices.Sort(unlisted)
		v.problem(problem{Kind: kindMarkerIncomplete, Key: key,
			Message: fmt.Sprintf("the completion marker lists %d files of window %s, and %d more of its files are in the folder (such as %s): it was written before they were committed, so a reader that waited for it may have read the window without them", mr.Files, window, len(unlisted), unlisted[0])})
	}
	return mr
}

// markerWindow is the window and pane a completion marker's key names
// (ownkeys.MarkerKey's inverse, for a key IsMarker takes).
func markerWindow(prefix, key string) (window string, pane int64) {
	rest := strings.TrimPrefix(key[len(ownkeys.Folder(prefix)):], ownkeys.MarkerName)
	rest = strings.TrimPrefix(rest, "-")
	window, p, _ := strings.Cut(rest, "pane-")
	window = strings.TrimSuffix(window, "-")
	if window == "" {
		window = "global"
	}
	pane, _ = strconv.ParseInt(p, 10, 64)
	return window, pane
}

// noOutputProblem is the problem of a folder with no committed output. With
// open uploads of s3once's under it (a run that is still writing, or one
// killed before it committed anything) the folder has no output yet, and
// its uploads, each a problem of its own, are what to look at; only where
// there are none is a wrong --bucket or --prefix the likely cause.
func (v *verifier) noOutputProblem() problem {
	p := problem{Kind: kindNoOutput, Key: ownkeys.Folder(v.o.prefix)}
	own := 0
	for _, u := range v.rep.Uploads {
		if u.Own {
			own++
		}
	}
	if own == 0 {
		p.Message = "no s3once output (files, manifests or settings marker) under the prefix: check --bucket and --prefix"
		return p
	}
	p.Message = fmt.Sprintf("no output yet: nothing is committed under the prefix (no files, manifests or settings marker), only open uploads of s3once's (%d, listed here): a run still writing, or one stopped before it committed; verify again once the run ends, or rerun it to write the folder", own)
	return p
}

// ---- uploads -------------------------------------------------------------

// checkUploads lists the open multipart uploads under the prefix: one of
// s3once's keys is a problem; another tool's is reported and left alone.
func (v *verifier) checkUploads(ctx context.Context) {
	folder := ownkeys.Folder(v.o.prefix)
	err := v.c.ListUploads(ctx, v.o.bucket, folder, func(page []s3bucket.Upload) error {
		for _, u := range page {
			own := v.ownKey(u.Key)
			v.rep.Uploads = append(v.rep.Uploads, leftUpload{Key: u.Key, UploadID: u.UploadID, Initiated: u.Initiated, Own: own})
			if own {
				age := ""
				if !u.Initiated.IsZero() {
					age = fmt.Sprintf(", initiated %s", u.Initiated.UTC().Format(time.RFC3339))
				}
				msg := fmt.Sprintf("an open multipart upload of s3once's%s: a writer still running, or one that stopped; once no pipeline writes here, 's3once sweep --bucket %s --prefix %s --older-than AGE' aborts it", age, v.o.bucket, v.o.prefix)
				if h, ok := v.leftOver(ctx, u.Key); ok {
					msg = fmt.Sprintf("a left-over upload%s: its key already holds a committed object (%s), and the sink commits with If-None-Match, so this upload can never complete (an earlier attempt's, killed before a rerun committed the file); 's3once sweep --bucket %s --prefix %s' removes it at any age", age, h, v.o.bucket, v.o.prefix)
				}
				v.problem(problem{Kind: kindUploadLeft, Key: u.Key, UploadID: u.UploadID, Message: msg})
			}
		}
		return nil
	})
	if err != nil {
		v.unverified(folder, fmt.Errorf("%w (run again to check for open uploads)", err))
	}
}

// leftOver reports whether an open upload of key is a left-over: key is an
// s3once file's and holds a committed object now (a HEAD; a failed one
// says nothing).
func (v *verifier) leftOver(ctx context.Context, key string) (s3bucket.Holding, bool) {
	if _, _, ok := ownkeys.ParseFileKey(v.o.prefix, key); !ok {
		return s3bucket.Holding{}, false
	}
	h, err := v.lookup(ctx, key, -1)
	return h, err == nil && h.Exists
}

// ownKey reports whether an upload's key is one s3once writes under the
// prefix or the staging prefix.
func (v *verifier) ownKey(key string) bool {
	p := v.o.prefix
	switch {
	case ownkeys.IsOutputProbe(p, key), ownkeys.IsOwnStaging(v.o.staging, key),
		ownkeys.IsSettings(p, key), ownkeys.IsMarker(p, key), ownkeys.IsManifest(p, key):
		return true
	}
	_, w, ok := ownkeys.ParseFileKey(p, key)
	if !ok {
		return false
	}
	_, why := v.fileName(key, 0, w)
	return why == ""
}

// ---- the outcome ---------------------------------------------------------

// finish sorts the report's lists and sets its outcome: problems found (1)
// over anything left unverified (3), else verified (0).
func (v *verifier) finish() *verifyReport {
	r := v.rep
	slices.SortFunc(r.Problems, func(a, b problem) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Kind, b.Kind), strings.Compare(a.UploadID, b.UploadID), strings.Compare(a.Message, b.Message))
	})
	slices.SortFunc(r.Unverified, func(a, b unverified) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(r.NamedLikeS3once, func(a, b namedLike) int { return strings.Compare(a.Key, b.Key) })
	slices.SortFunc(r.Uploads, func(a, b leftUpload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.UploadID, b.UploadID))
	})
	byPart := make(map[partKey]*partitionReport, len(r.Partitions))
	for _, pr := range r.Partitions {
		byPart[partKey{pr.Destination, pr.Window}] = pr
	}
	for _, p := range r.Problems {
		if pr := byPart[partKey{p.Destination, p.Window}]; pr != nil && p.Window != "" {
			pr.Problems++
		}
	}
	for _, pr := range r.Partitions {
		if r.RecordsFrom != recordsFromManifest && pr.RecordsFrom != "" {
			r.RecordsFrom = pr.RecordsFrom
		}
	}
	// Empty lists are [] in JSON, never null.
	r.Partitions = nonNil(r.Partitions)
	r.CompletionMarkers = nonNil(r.CompletionMarkers)
	r.Uploads = nonNil(r.Uploads)
	r.NamedLikeS3once = nonNil(r.NamedLikeS3once)
	r.Problems = nonNil(r.Problems)
	r.Unverified = nonNil(r.Unverified)
	switch {
	case len(r.Problems) > 0:
		r.Outcome, r.ExitCode = outcomeProblems, exitProblems
	case len(r.Unverified) > 0:
		r.Outcome, r.ExitCode = outcomeIncomplete, exitUnverified
	default:
		r.Outcome, r.ExitCode = outcomeVerified, exitOK
	}
	return r
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
