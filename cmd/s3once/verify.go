package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
)

const verifyUsage = `Usage: s3once verify --bucket B --prefix P [--read] [--json] [flags]

Proves, reading only, that an output folder holds what its runs wrote: for
each partition (a destination and a window: the files
P/<destination>/<window>-pane-..., whatever their extension),

  - every file its manifest (_s3once_manifest-<window>) lists is there,
    with the size and CRC64NVME the manifest records;
  - no s3once file lies beside them that the manifest does not list, of
    any extension (such a partition holds two runs' files: mixed);
  - a partition without a manifest in an output-version-2 folder is a
    problem where its window's completion marker exists (the sink writes
    it after every manifest of the window: manifest-missing), and
    unverified otherwise (the run may not have finished, or a rerun found
    files of two runs there and wrote no manifest);
  - without a manifest (output version 1, an unfinished window), the
    listing and the settings marker: every file named for the marker's
    Shards and extension, no shard named two ways, one extension; and no
    two files of one pane with the same bytes where the sink never writes
    two alike (duplicate-file). A listing cannot prove the files' bytes:
    such a partition is unverified (exit 3) unless --read reads them.

and, for the folder: the settings marker (_s3once_settings) decodes and
records an output version this s3once knows; every completion marker
(_SUCCESS...) that lists files lists only files that are there, with their
sizes, and all of its window's files; and no multipart upload of s3once's
is left open under P (one whose key already holds a committed object is a
left-over that can never complete: 's3once sweep' removes it at any age).

With --read, verify also reads files: every file of a partition without a
manifest, decoded with its codec (gzip, zstd, none) and format (text, JSON
Lines, CSV, Parquet), and every file a manifest lists, whose records it
counts (lines of text and JSON Lines, rows of Parquet from the footer; not
CSV, whose quoted fields may hold newlines) and compares with the
manifest's (records-mismatch). Without --read the record counts reported
are the manifests' own, unchecked, and the report says so. --read holds up
to 4 files in memory at once.

Keys that have the shape of an s3once file name but numbers s3once does
not write are listed apart, as named like s3once's: verify neither counts
them as files nor as problems. Other keys under P are counted, not
judged. Nothing in the bucket changes.

With --table-run, P is a run's folder of the Iceberg table stage
(<table location>/data/<run id>): every window of committed files must have
the stage's commit marker (_s3once_table_commit-<window>) beside it,
naming this run and as many files; committed files of a run that never
reached the table are reported (table-run-missing), by run id.

A folder a pipeline is still writing may show open uploads and partitions
without manifests: verify after the run.

Exit codes:
  0  verified: every partition was proved (see docs/operating.md for
     what that proves), and no problem was found
  1  problems found (listed on stdout; with --json in "problems")
  2  usage error
  3  could not verify: an S3 call failed, or something could not be
     proved (listed in "unverified"); no problem was found in the rest
A problem found wins over what could not be checked: exit 1.

With --json the report is one JSON object on stdout; its field names and
problem kinds are stable:
  settings-unreadable, settings-missing, manifest-unreadable,
  manifest-missing, manifest-entry-foreign, file-missing, file-changed,
  file-extra, file-other-settings, shards-mixed, duplicate-file,
  file-unreadable, records-mismatch, marker-unreadable,
  marker-file-missing, marker-incomplete, upload-left, no-output,
  table-run-missing

Examples:
  s3once verify --bucket data --prefix events/
  s3once verify --bucket data --prefix events/ --read
  s3once verify --bucket data --prefix events/ --json \
      --endpoint http://minio:9000 --path-style
`

// Exit codes of verify beyond the common ones.
const (
	exitProblems   = 1
	exitUnverified = 3
)

// Outcomes of verify.
const (
	outcomeVerified   = "verified"
	outcomeProblems   = "problems"
	outcomeIncomplete = "incomplete"
)

// verifyPolicy: verify's calls are reads, so each is tried a few times.
const (
	defaultVerifyAttempts    = 3
	defaultVerifyConcurrency = 16
)

func verifyCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("verify", verifyUsage)
	var (
		bucket      = fs.String("bucket", "", "bucket of the output folder (required)")
		prefix      = fs.String("prefix", "", "the sink's output prefix (Config.Prefix) (required)")
		wholeBucket = fs.Bool("whole-bucket", false, "allow an empty --prefix: the output folder is the bucket's root")
		staging     = fs.String("staging-prefix", s3call.DefaultStagingPrefix, "prefix of the side objects (skipped where it lies under --prefix)")
		asJSON      = fs.Bool("json", false, "print the report as JSON")
		read        = fs.Bool("read", false, "read every file of a partition without a manifest (decoded with its codec and format), and count the records of every file a manifest lists")
		tableRun    = fs.Bool("table-run", false, "the prefix is a run's folder of the Iceberg table stage (<table location>/data/<run id>): also check that its files reached the table")
		concurrency = fs.Int("concurrency", defaultVerifyConcurrency, "look-ups in flight at once")
		attempts    = fs.Int("max-attempts", defaultVerifyAttempts, "tries per S3 call on retryable errors (on top of the SDK's own)")
		cf          clientFlags
	)
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
		return usagef("--prefix is required (add --whole-bucket to verify a folder at the bucket's root)")
	case *concurrency < 1 || *concurrency > 256:
		return usagef("--concurrency must be in [1, 256]")
	case *attempts < 1 || *attempts > 100:
		return usagef("--max-attempts must be in [1, 100]")
	case *staging == "":
		return usagef("--staging-prefix must not be empty (the sink refuses an empty StagingPrefix)")
	case ownkeys.SameFolder(*staging, *prefix) || ownkeys.Under(*staging, ownkeys.Folder(*prefix)):
		return usagef("--staging-prefix %q holds --prefix %q: give the staging prefix the sink runs with", *staging, *prefix)
	}
	client, err := cf.client(ctx)
	if err != nil {
		return err
	}
	// The options are checked as the sink's committer checks them; verify
	// itself only reads, through a bucket client under the same options.
	if _, err := committer.New(client, committer.Options{MaxAttempts: *attempts, MaxRounds: *attempts, StagingPrefix: *staging, SkipPreflight: true}); err != nil {
		return usagef("%v", err)
	}
	c := s3bucket.New(client, s3bucket.Options{MaxAttempts: *attempts, MaxRounds: *attempts})
	rep := verifyFolder(ctx, c, verifyOptions{
		bucket: *bucket, prefix: *prefix, staging: *staging, concurrency: *concurrency, now: time.Now().UTC(),
		tableRun: *tableRun, read: *read,
	})
	if *asJSON {
		if err := writeJSON(e.stdout, rep); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	} else {
		printVerify(e.stdout, rep)
	}
	switch rep.ExitCode {
	case exitProblems:
		return &exitError{code: exitProblems, msg: fmt.Sprintf("problems found in s3://%s/%s: %d (see the report)", rep.Bucket, rep.Prefix, len(rep.Problems))}
	case exitUnverified:
		return &exitError{code: exitUnverified, msg: fmt.Sprintf("could not verify s3://%s/%s: what could not be checked: %d (see the report); no problem was found in the rest", rep.Bucket, rep.Prefix, len(rep.Unverified))}
	}
	return nil
}

// verifyReport is verify's output; its field names are part of the tool's
// interface.
type verifyReport struct {
	Bucket        string `json:"bucket"`
	Prefix        string `json:"prefix"`
	StagingPrefix string `json:"staging_prefix"`
	// Outcome is "verified", "problems" or "incomplete", ExitCode the
	// command's exit code (0, 1 or 3).
	Outcome  string         `json:"outcome"`
	ExitCode int            `json:"exit_code"`
	Settings settingsReport `json:"settings"`
	// Partitions are sorted by destination, then window.
	Partitions        []*partitionReport `json:"partitions"`
	CompletionMarkers []markerReport     `json:"completion_markers"`
	// Uploads are every open multipart upload under the prefix, s3once's
	// (a problem each) and other tools' (left alone).
	Uploads []leftUpload `json:"uploads"`
	// NamedLikeS3once are keys with an s3once file name's shape that
	// cannot be this folder's files.
	NamedLikeS3once []namedLike `json:"named_like_s3once"`
	// OtherKeys counts the objects under the prefix that are neither
	// s3once's nor named like them.
	OtherKeys int `json:"other_keys"`
	// TableRun (with --table-run) lists the windows of the run that
	// reached the table.
	TableRun []tableRunReport `json:"table_run,omitempty"`
	// Read: files were read (--read).
	Read bool `json:"read"`
	// RecordsFrom is "manifest, unchecked" where any partition's record
	// count is its manifest's, not counted from its files; "files" where
	// every counted partition's is the files'.
	RecordsFrom string       `json:"records_from,omitempty"`
	Problems    []problem    `json:"problems"`
	Unverified  []unverified `json:"unverified"`
	// CheckedAt is this machine's clock when the check began.
	CheckedAt time.Time `json:"checked_at"`
}

type settingsReport struct {
	Key   string `json:"key"`
	Found bool   `json:"found"`
	// OutputVersion is as the marker records it (every marker does);
	// empty where there is no marker, or one that is damaged.
	OutputVersion string `json:"output_version,omitempty"`
	// Extension is the files' extension, from the marker's file names.
	Extension string `json:"extension,omitempty"`
	Shards    int    `json:"shards,omitempty"`
	// AutoMaxShards is the bound of automatic sharding (TargetFileBytes),
	// where the marker records it instead of Shards.
	AutoMaxShards int `json:"auto_max_shards,omitempty"`
	// Error says why the marker could not be judged (also a problem).
	Error string `json:"error,omitempty"`
}

type partitionReport struct {
	Destination string `json:"destination"`
	Window      string `json:"window"`
	// CheckedBy is "manifest", or "listing" where there is no manifest
	// (Note says why).
	CheckedBy string `json:"checked_by"`
	Manifest  string `json:"manifest,omitempty"`
	Note      string `json:"note,omitempty"`
	// Files counts the s3once files listed; Entries the manifest's, whose
	// Records and Bytes are summed (Bytes: the listed files' where there
	// is no manifest).
	Files   int   `json:"files"`
	Entries int   `json:"manifest_entries,omitempty"`
	Records int64 `json:"records,omitempty"`
	Bytes   int64 `json:"bytes"`
	// RecordsFrom says where Records comes from: "files" (counted from
	// their bytes, with --read; for a manifest, equal to its counts) or
	// "manifest, unchecked"; empty where none was counted.
	RecordsFrom string `json:"records_from,omitempty"`
	// Mixed: the partition holds files of more than one run.
	Mixed    bool `json:"mixed"`
	Problems int  `json:"problems"`
}

type markerReport struct {
	Key string `json:"key"`
	// Files is how many files the marker lists (0 for an empty _SUCCESS).
	Files int `json:"files"`
}

type leftUpload struct {
	Key       string    `json:"key"`
	UploadID  string    `json:"upload_id"`
	Initiated time.Time `json:"initiated"`
	Own       bool      `json:"own"`
}

type namedLike struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
}

// problem is one inconsistency found; Destination and Window name its
// partition where it has one.
type problem struct {
	Kind        string `json:"kind"`
	Destination string `json:"destination,omitempty"`
	Window      string `json:"window,omitempty"`
	Key         string `json:"key"`
	UploadID    string `json:"upload_id,omitempty"`
	Message     string `json:"message"`
}

// unverified is what could not be checked, and why.
type unverified struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

// printVerify writes the human report.
func printVerify(w io.Writer, r *verifyReport) {
	fmt.Fprintf(w, "s3once verify s3://%s/%s\n", r.Bucket, r.Prefix)
	s := r.Settings
	switch {
	case !s.Found:
		fmt.Fprintf(w, "  settings marker  none (%s): an output-version-1 folder, or not an s3once folder\n", s.Key)
	case s.Error != "":
		fmt.Fprintf(w, "  settings marker  %s: cannot be judged\n", s.Key)
	default:
		fmt.Fprintf(w, "  settings marker  %s: output version %s, files *%s, %d shards\n", s.Key, s.OutputVersion, s.Extension, s.Shards)
	}
	for _, p := range r.Partitions {
		state := "ok"
		switch {
		case p.Mixed:
			state = fmt.Sprintf("MIXED (problems: %d)", p.Problems)
		case p.Problems > 0:
			state = fmt.Sprintf("problems: %d", p.Problems)
		}
		dest := p.Destination
		if dest == "" {
			dest = "(no destination)"
		}
		records := ""
		if p.RecordsFrom != "" {
			records = fmt.Sprintf(", %d records (from the %s)", p.Records, p.RecordsFrom)
		}
		fmt.Fprintf(w, "  partition %s %s: %d files, %s%s, by %s: %s\n", dest, p.Window, p.Files, humanBytes(p.Bytes), records, p.CheckedBy, state)
		if p.Note != "" {
			fmt.Fprintf(w, "      %s\n", p.Note)
		}
	}
	if r.RecordsFrom == recordsFromManifest {
		fmt.Fprintf(w, "  record counts: from the manifests, unchecked (verify --read counts them from the files, for text, JSON Lines and Parquet)\n")
	}
	if len(r.CompletionMarkers) > 0 {
		fmt.Fprintf(w, "  completion markers: %d\n", len(r.CompletionMarkers))
	}
	for _, t := range r.TableRun {
		fmt.Fprintf(w, "  table %s: window %s in snapshot %d (%d files)\n", t.Table, t.Window, t.SnapshotID, t.Files)
	}
	if r.OtherKeys > 0 {
		fmt.Fprintf(w, "  other keys (not s3once's, not judged): %d\n", r.OtherKeys)
	}
	if len(r.NamedLikeS3once) > 0 {
		fmt.Fprintf(w, "  named like s3once's, not s3once's (left alone): %d\n", len(r.NamedLikeS3once))
		for _, n := range r.NamedLikeS3once {
			fmt.Fprintf(w, "    %s: %s\n", n.Key, n.Reason)
		}
	}
	for _, u := range r.Uploads {
		if !u.Own {
			fmt.Fprintf(w, "  another tool's open upload (left alone): %s upload %s\n", u.Key, u.UploadID)
		}
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "  problems: %d\n", len(r.Problems))
		for _, p := range r.Problems {
			up := ""
			if p.UploadID != "" {
				up = " upload " + p.UploadID
			}
			fmt.Fprintf(w, "    [%s] %s%s: %s\n", p.Kind, p.Key, up, p.Message)
		}
	}
	if len(r.Unverified) > 0 {
		fmt.Fprintf(w, "  could not check: %d (run verify again; where it persists, check the endpoint, the credentials and their s3:ListBucket, s3:GetObject and s3:ListBucketMultipartUploads permissions)\n", len(r.Unverified))
		for _, u := range r.Unverified {
			fmt.Fprintf(w, "    %s: %s\n", u.Key, u.Error)
		}
	}
	fmt.Fprintf(w, "%s\n", strings.ToUpper(r.Outcome))
}
