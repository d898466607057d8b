package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/recoverable"
)

const sweepUsage = `Usage: s3once sweep --bucket B --prefix P --older-than AGE [flags]

Aborts s3once's multipart uploads under --prefix (files and preflight
probes) and under --staging-prefix (preflight probes) that were initiated
more than --older-than ago, and deletes s3once's side objects and probes
under --staging-prefix last modified more than --older-than ago. Both
prefixes are folders ("events" never holds "events-v2/"); keys of other
names, other tools' uploads and anything else younger are never touched.
Ages are measured by the S3 server's clock, not this machine's.

An upload of an s3once file whose key already holds an object (looked at
when the sweep lists it) is aborted whatever its age, and its side objects
deleted: the sink commits with If-None-Match, so such an upload, left by a
crashed attempt or a zombie, can never become its key's object. A checkpoint
that names one then restores to a rewrite of the file (files_rewritten), or,
for a program that uses the recoverable and committer packages without the
sink, to ErrNoSuchUpload; a pipeline still writing such a file (a rerun
beside the sweep) fails that write. --keep-restorable leaves them to
--older-than; so does --unconditional, for a folder whose files were
committed without If-None-Match (AllowUnconditional), where such an upload
may still replace the object.

AGE must exceed the longest time a file may stay open (until it is
committed) plus the longest time a checkpoint is retained: a sweep destroys
what such a checkpoint still references. An AGE under one hour is refused
unless --force is given. A staging prefix over the output prefix is refused.
Use --dry-run first.

Prints a summary (or --json) on stdout, warnings and a progress line on
stderr. A dry run also lists what it would remove, one line (or, with
--json, one item) per upload, side object or old version, the first
--limit of them in key order. Exit codes: 0 success, 1 the sweep failed in whole or in part,
2 usage error.

Examples:
  s3once sweep --bucket data --prefix events/ --older-than 7d --dry-run
  s3once sweep --bucket data --prefix events/ --older-than 7d \
      --s3-endpoint http://minio:9000 --path-style
`

func sweepCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("sweep", sweepUsage)
	var (
		bucket      = fs.String("bucket", "", "bucket to sweep (required)")
		prefix      = fs.String("prefix", "", "the sink's output prefix: uploads under it are swept (required)")
		wholeBucket = fs.Bool("whole-bucket", false, "allow an empty --prefix: sweep every upload in the bucket (only for buckets the sink owns)")
		staging     = fs.String("staging-prefix", recoverable.DefaultStagingPrefix, "prefix of the side objects")
		olderThan   age
		dryRun      = fs.Bool("dry-run", false, "report what would be removed, remove nothing")
		force       = fs.Bool("force", false, "allow an --older-than under one hour")
		asJSON      = fs.Bool("json", false, "print the report as JSON")
		quiet       = fs.Bool("quiet", false, "no progress line")
		concurrency = fs.Int("concurrency", committer.DefaultSweepConcurrency, "uploads inspected and aborted at once")
		attempts    = fs.Int("max-attempts", 3, "tries per S3 call on retryable errors (on top of the SDK's own)")
		versioned   = fs.Bool("versioned", false, "the bucket keeps versions: also remove the old versions and delete markers of s3once's staging keys")
		limit       = fs.Int("limit", 100, "with --dry-run: list at most this many of the items it would remove (0: counts only)")
		keepRestore = fs.Bool("keep-restorable", false, "leave uploads of keys that hold an object (and their side objects) to --older-than")
		uncond      = fs.Bool("unconditional", false, "the folder's files were committed without If-None-Match (AllowUnconditional): leave uploads of keys that hold an object to --older-than")
		cf          clientFlags
	)
	fs.Var(&olderThan, "older-than", "minimum age of what is removed: a duration (36h) or days (7d) (required)")
	cf.register(fs)
	cf.registerOwner(fs)
	if err := parse(fs, args, e.stdout); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected arguments %q", fs.Args())
	case *bucket == "":
		return usagef("--bucket is required")
	case *prefix == "" && !*wholeBucket:
		return usagef("--prefix is required (an empty prefix would sweep other applications' uploads; add --whole-bucket if the sink owns the bucket)")
	case olderThan.d <= 0:
		return usagef("--older-than is required")
	case *concurrency < 1 || *concurrency > 256:
		return usagef("--concurrency must be in [1, 256]")
	case *attempts < 1 || *attempts > 100:
		return usagef("--max-attempts must be in [1, 100]")
	case *limit < 0:
		return usagef("--limit must not be negative")
	}
	client, err := cf.client(ctx)
	if err != nil {
		return err
	}
	c, err := committer.New(client, committer.Options{SweepConcurrency: *concurrency, MaxAttempts: *attempts, MaxRounds: *attempts, Versioned: *versioned})
	if err != nil {
		return usagef("%v", err)
	}
	prog := newProgress(e.stderr, *quiet || *asJSON && !isTerminal(e.stderr))
	so := committer.SweepOptions{
		Bucket: *bucket, Prefix: *prefix, WholeBucket: *wholeBucket, StagingPrefix: *staging,
		OlderThan: olderThan.d, DryRun: *dryRun, Force: *force, Progress: prog.update,
		KeepRestorable: *keepRestore, Unconditional: *uncond,
	}
	items := &staleItems{limit: *limit}
	if *dryRun {
		so.Stale = items.add
	}
	rep, err := c.Sweep(ctx, so)
	prog.done()
	if errors.Is(err, recoverable.ErrInvalidOptions) {
		return usagef("%v", err)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	if !rep.ServerNow.IsZero() {
		if *asJSON {
			if jerr := writeJSON(e.stdout, sweepJSON(rep, olderThan.d, items)); jerr != nil && err == nil {
				err = jerr
			}
		} else {
			printSweep(e.stdout, rep, olderThan.d)
			if rep.DryRun {
				printItems(e.stdout, items)
			}
		}
	}
	return err
}

// printSweep writes the human summary.
func printSweep(w io.Writer, rep committer.SweepReport, olderThan time.Duration) {
	mode := ""
	removed, aborted, deleted := "removed", "aborted", "deleted"
	if rep.DryRun {
		mode = " (dry run: nothing was changed)"
		removed, aborted, deleted = "would remove", "would abort", "would delete"
	}
	fmt.Fprintf(w, "s3once sweep s3://%s/%s%s\n", rep.Bucket, rep.Prefix, mode)
	skew := ""
	if rep.ClockSkew >= committer.ClockSkewNoise || rep.ClockSkew <= -committer.ClockSkewNoise {
		skew = fmt.Sprintf(" (this machine's clock is off by %v)", -rep.ClockSkew)
	}
	fmt.Fprintf(w, "  server time   %s%s\n", rep.ServerNow.UTC().Format(time.RFC3339), skew)
	fmt.Fprintf(w, "  cutoff        %s (older than %v)\n", rep.Cutoff.UTC().Format(time.RFC3339), olderThan)
	line := func(what, verb string, n committer.SweepCounts) {
		done := n.Removed
		if rep.DryRun {
			done = n.Stale // what would go
		}
		left := ""
		if n.LeftOver > 0 {
			left = fmt.Sprintf(", %d of them younger at committed keys", n.LeftOver)
		}
		fmt.Fprintf(w, "  %-13s %d scanned, %d stale (%s%s), %s %d, kept %d, not s3once's %d, failed %d\n",
			what, n.Scanned, n.Stale, humanBytes(n.Bytes), left, verb, done, n.Kept, n.NotOwn, n.Failed)
	}
	line("uploads", aborted, rep.Uploads)
	line("side objects", deleted, rep.SideObjects)
	if rep.Versions.Scanned > 0 {
		line("old versions", deleted, rep.Versions)
	}
	if rep.DryRun {
		fmt.Fprintf(w, "  total         %s %d uploads and %d side objects, %s\n", removed,
			rep.Uploads.Stale, rep.SideObjects.Stale, humanBytes(rep.Uploads.Bytes+rep.SideObjects.Bytes))
	} else {
		fmt.Fprintf(w, "  total         %s %d uploads and %d side objects, %s\n", removed,
			rep.Uploads.Removed, rep.SideObjects.Removed, humanBytes(rep.Uploads.Bytes+rep.SideObjects.Bytes))
	}
}

// staleItems keeps the first limit items of a dry run in key order (kind
// first: uploads, side objects, old versions), whatever order the sweep
// finds them in, in memory bounded by limit.
type staleItems struct {
	limit int
	total int
	kept  []committer.SweepItem
}

var kindOrder = map[string]int{"upload": 0, "side object": 1, "old version": 2}

func compareItems(a, b committer.SweepItem) int {
	return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Key, b.Key),
		cmp.Compare(a.UploadID, b.UploadID), cmp.Compare(a.VersionID, b.VersionID))
}

func (s *staleItems) add(it committer.SweepItem) {
	s.total++
	if s.limit == 0 {
		return
	}
	s.kept = append(s.kept, it)
	if len(s.kept) >= 2*s.limit {
		s.trim()
	}
}

func (s *staleItems) trim() {
	slices.SortFunc(s.kept, compareItems)
	s.kept = s.kept[:min(len(s.kept), s.limit)]
}

// list returns the kept items, sorted, and how many more were found.
func (s *staleItems) list() ([]committer.SweepItem, int) {
	s.trim()
	return s.kept, s.total - len(s.kept)
}

// printItems lists a dry run's items, one a line.
func printItems(w io.Writer, s *staleItems) {
	items, more := s.list()
	if len(items) > 0 {
		fmt.Fprintln(w, "would remove:")
	}
	for _, it := range items {
		switch it.Kind {
		case "upload":
			fmt.Fprintf(w, "  upload       %s  upload %s, %s, initiated %s%s\n", it.Key, it.UploadID, humanBytes(it.Bytes), it.Time.UTC().Format(time.RFC3339), leftOverNote(it))
		case "side object":
			fmt.Fprintf(w, "  side object  %s  %s, modified %s%s\n", it.Key, humanBytes(it.Bytes), it.Time.UTC().Format(time.RFC3339), leftOverNote(it))
		default:
			fmt.Fprintf(w, "  old version  %s  version %s, %s\n", it.Key, it.VersionID, humanBytes(it.Bytes))
		}
	}
	if more > 0 {
		fmt.Fprintf(w, "  ... and %d more (--limit %d lists them all)\n", more, s.total)
	}
}

// leftOverNote marks an item that goes whatever its age.
func leftOverNote(it committer.SweepItem) string {
	switch {
	case !it.LeftOver:
		return ""
	case it.Kind == "upload":
		return " (its key holds an object)"
	}
	return " (of an upload whose key holds an object)"
}

// sweepReportJSON is the --json form of a sweep report; its field names are
// part of the tool's interface.
type sweepReportJSON struct {
	Bucket        string     `json:"bucket"`
	Prefix        string     `json:"prefix"`
	StagingPrefix string     `json:"staging_prefix"`
	DryRun        bool       `json:"dry_run"`
	ServerTime    time.Time  `json:"server_time"`
	ClockSkewSec  float64    `json:"clock_skew_seconds"`
	Cutoff        time.Time  `json:"cutoff"`
	OlderThanSec  float64    `json:"older_than_seconds"`
	Uploads       countsJSON `json:"uploads"`
	SideObjects   countsJSON `json:"side_objects"`
	OldVersions   countsJSON `json:"old_versions"`
	Warnings      []string   `json:"warnings"`
	// Items are, in a dry run, the first --limit things it would remove,
	// in key order; ItemsNotListed counts the rest.
	Items          []itemJSON `json:"items,omitempty"`
	ItemsNotListed int        `json:"items_not_listed,omitempty"`
}

type itemJSON struct {
	Kind      string     `json:"kind"` // "upload", "side object" or "old version"
	Key       string     `json:"key"`
	UploadID  string     `json:"upload_id,omitempty"`
	VersionID string     `json:"version_id,omitempty"`
	Bytes     int64      `json:"bytes"`
	Time      *time.Time `json:"time,omitempty"` // initiated or last modified
	LeftOver  bool       `json:"left_over,omitempty"`
}

type countsJSON struct {
	Scanned int   `json:"scanned"`
	Stale   int   `json:"stale"`
	Removed int   `json:"removed"`
	Kept    int   `json:"kept"`
	NotOwn  int   `json:"not_own"`
	Failed  int   `json:"failed"`
	Bytes   int64 `json:"stale_bytes"`
	// LeftOver of Stale were younger than the cutoff, at keys that hold
	// an object (uploads) or of such uploads (side objects).
	LeftOver int `json:"left_over"`
}

func sweepJSON(rep committer.SweepReport, olderThan time.Duration, items *staleItems) sweepReportJSON {
	counts := func(c committer.SweepCounts) countsJSON {
		return countsJSON{Scanned: c.Scanned, Stale: c.Stale, Removed: c.Removed, Kept: c.Kept, NotOwn: c.NotOwn, Failed: c.Failed, Bytes: c.Bytes, LeftOver: c.LeftOver}
	}
	w := rep.Warnings
	if w == nil {
		w = []string{}
	}
	out := sweepReportJSON{
		Bucket: rep.Bucket, Prefix: rep.Prefix, StagingPrefix: rep.StagingPrefix, DryRun: rep.DryRun,
		ServerTime: rep.ServerNow.UTC(), ClockSkewSec: rep.ClockSkew.Seconds(), Cutoff: rep.Cutoff.UTC(),
		OlderThanSec: olderThan.Seconds(), Uploads: counts(rep.Uploads), SideObjects: counts(rep.SideObjects),
		OldVersions: counts(rep.Versions), Warnings: w,
	}
	if rep.DryRun {
		list, more := items.list()
		for _, it := range list {
			j := itemJSON{Kind: it.Kind, Key: it.Key, UploadID: it.UploadID, VersionID: it.VersionID, Bytes: it.Bytes, LeftOver: it.LeftOver}
			if !it.Time.IsZero() {
				t := it.Time.UTC()
				j.Time = &t
			}
			out.Items = append(out.Items, j)
		}
		out.ItemsNotListed = more
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// progress prints a progress line on stderr while a sweep runs long: at most
// once a second, and not at all for sweeps shorter than that. On a terminal
// the line is rewritten in place.
type progress struct {
	w      io.Writer
	off    bool
	tty    bool
	start  time.Time
	mu     sync.Mutex
	last   time.Time
	shown  bool
	period time.Duration
}

func newProgress(w io.Writer, off bool) *progress {
	now := time.Now()
	return &progress{w: w, off: off, tty: isTerminal(w), start: now, last: now, period: time.Second}
}

func (p *progress) update(rep committer.SweepReport) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < p.period {
		return
	}
	p.last = now
	line := fmt.Sprintf("sweeping: uploads %d scanned, %d stale, %d aborted; side objects %d scanned, %d stale, %d deleted (%s)",
		rep.Uploads.Scanned, rep.Uploads.Stale, rep.Uploads.Removed,
		rep.SideObjects.Scanned, rep.SideObjects.Stale, rep.SideObjects.Removed,
		now.Sub(p.start).Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown = true
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
