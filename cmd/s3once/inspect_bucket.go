package main

// inspect --bucket: what the bucket holds for one key, read only.

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
)

// inspectPolicy is how inspect calls S3: a read, tried again on what is
// worth trying again, each attempt bounded.
var inspectPolicy = s3call.Policy{
	CallTimeout: 30 * time.Second, Attempts: 3, Retry: s3call.RetryTransient,
	BaseBackoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second,
}

// keyReport is inspect --bucket's output; its field names are part of the
// tool's interface.
type keyReport struct {
	Bucket        string         `json:"bucket"`
	Key           string         `json:"key"`
	StagingPrefix string         `json:"staging_prefix"`
	OwnFileName   bool           `json:"own_file_name"` // the key is named as s3once names files
	Object        *objectReport  `json:"object"`        // nil: no object at the key
	Uploads       []uploadReport `json:"uploads"`
	// State is "committed", "open", "left-over" or "missing", for the key
	// as a whole: committed when the object exists, else open when an
	// upload is younger than the cutoff, else left-over when uploads are
	// left, else missing.
	State string `json:"state"`
	// SweepCommand removes the left-overs once they are older than the
	// cutoff.
	SweepCommand string `json:"sweep_command"`
	// CheckedAt is this machine's clock when the report was made.
	CheckedAt time.Time `json:"checked_at"`
}

type objectReport struct {
	Size            int64     `json:"size"`
	ETag            string    `json:"etag"`
	LastModified    time.Time `json:"last_modified"`
	ChecksumType    string    `json:"checksum_type,omitempty"`
	CRC64NVME       string    `json:"crc64nvme,omitempty"` // hex
	CRC64NVMEBase64 string    `json:"crc64nvme_base64,omitempty"`
}

type uploadReport struct {
	UploadID  string       `json:"upload_id"`
	Initiated time.Time    `json:"initiated"`
	Parts     partsReport  `json:"parts"`
	Side      []sideObject `json:"side_objects"`
	// LatestTail is the key of the newest side object (the highest persist
	// number): the tail a resume from the latest token reads.
	LatestTail string `json:"latest_tail,omitempty"`
	// State is "open" (resumable from a token, if a checkpoint holds one)
	// or "left-over" (the sweep would abort it); Action says what s3once
	// would do.
	State  string `json:"state"`
	Action string `json:"action"`
}

type partsReport struct {
	Count int          `json:"count"`
	Bytes int64        `json:"bytes"`
	List  []partReport `json:"list"`
}

type partReport struct {
	Number    int32     `json:"number"`
	Size      int64     `json:"size"`
	ETag      string    `json:"etag"`
	CRC64NVME string    `json:"crc64nvme,omitempty"` // base64, as S3 gives it
	Modified  time.Time `json:"last_modified"`
}

type sideObject struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	LastModified time.Time `json:"last_modified"`
}

// s3Reader is the read-only part of the S3 API inspect uses.
type s3Reader interface {
	s3call.PartsAPI
	s3call.ObjectsAPI
	s3call.UploadsAPI
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// inspectKey reads what the bucket holds for key: the object, every open
// upload of exactly that key (or only uploadID when given) with its parts,
// and each upload's side objects under staging. It changes nothing.
//
// The report's sweep command carries cf's endpoint and addressing, so that
// it reaches the same server when pasted, and the sink's output prefix:
// sweepPrefix when given, else the nearest folder above the key that holds
// a settings marker, else the key's own folder.
func inspectKey(ctx context.Context, c s3Reader, bucket, key, uploadID, staging, sweepPrefix string, cf clientFlags, cutoff time.Duration, now time.Time) (keyReport, error) {
	staging = s3call.StagingPrefix(staging)
	rep := keyReport{Bucket: bucket, Key: key, StagingPrefix: staging, CheckedAt: now.UTC(), Uploads: []uploadReport{}}
	rep.OwnFileName = ownkeys.IsFileName("", key)

	head, err := s3call.Do(ctx, inspectPolicy, "", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	})
	switch {
	case err == nil:
		o := &objectReport{Size: aws.ToInt64(head.ContentLength), ETag: aws.ToString(head.ETag), LastModified: aws.ToTime(head.LastModified).UTC(), ChecksumType: string(head.ChecksumType)}
		if crc, ok := s3call.DecodeCRC(aws.ToString(head.ChecksumCRC64NVME)); ok {
			o.CRC64NVME, o.CRC64NVMEBase64 = crcHex(crc), aws.ToString(head.ChecksumCRC64NVME)
		}
		rep.Object = o
	case s3call.IsNotFound(err):
	default:
		return rep, fmt.Errorf("head s3://%s/%s: %w", bucket, key, err)
	}

	err = s3call.ListUploads(ctx, c, inspectPolicy, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)}, func(out *s3.ListMultipartUploadsOutput) (bool, error) {
		for _, u := range out.Uploads {
			id := aws.ToString(u.UploadId)
			if aws.ToString(u.Key) != key || (uploadID != "" && id != uploadID) {
				continue // a longer key that starts with this one, or another upload
			}
			rep.Uploads = append(rep.Uploads, uploadReport{UploadID: id, Initiated: aws.ToTime(u.Initiated).UTC()})
		}
		return true, nil
	})
	if err != nil {
		return rep, fmt.Errorf("list uploads of s3://%s/%s: %w", bucket, key, err)
	}
	for i := range rep.Uploads {
		u := &rep.Uploads[i]
		if err := readUpload(ctx, c, bucket, key, staging, u); err != nil {
			return rep, err
		}
		u.State, u.Action = uploadState(rep.Object != nil, u, cutoff, now)
	}
	slices.SortFunc(rep.Uploads, func(a, b uploadReport) int { return a.Initiated.Compare(b.Initiated) })

	rep.State = "missing"
	switch {
	case rep.Object != nil:
		rep.State = "committed"
	case slices.ContainsFunc(rep.Uploads, func(u uploadReport) bool { return u.State == "open" }):
		rep.State = "open"
	case len(rep.Uploads) > 0:
		rep.State = "left-over"
	}
	if sweepPrefix == "" {
		if sweepPrefix, err = sinkPrefix(ctx, c, bucket, key); err != nil {
			return rep, err
		}
	}
	rep.SweepCommand = sweepCommand(bucket, sweepPrefix, key, staging, cf, cutoff)
	return rep, nil
}

// wholeBucket is sinkPrefix's answer for a sink writing at the bucket's
// root.
const wholeBucket = "/"

// sinkPrefix finds the output prefix of the sink that wrote key: the
// nearest folder above it holding the settings marker each sink folder
// has (wholeBucket for the root), or "" when there is none.
func sinkPrefix(ctx context.Context, c s3Reader, bucket, key string) (string, error) {
	for dir := path.Dir(key); ; dir = path.Dir(dir) {
		folder := ""
		if dir != "." && dir != "/" {
			folder = dir
		}
		marker := ownkeys.SettingsKey(folder)
		_, err := s3call.Do(ctx, inspectPolicy, "", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
			return c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(marker)})
		})
		switch {
		case err == nil && folder == "":
			return wholeBucket, nil
		case err == nil:
			return ownkeys.Folder(folder), nil
		case !s3call.IsNotFound(err):
			return "", fmt.Errorf("look for the settings marker s3://%s/%s: %w", bucket, marker, err)
		case folder == "":
			return "", nil
		}
	}
}

// readUpload lists the upload's parts and its side objects.
func readUpload(ctx context.Context, c s3Reader, bucket, key, staging string, u *uploadReport) error {
	u.Parts.List, u.Side = []partReport{}, []sideObject{}
	err := s3call.ListParts(ctx, c, inspectPolicy, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(u.UploadID)}, func(out *s3.ListPartsOutput) (bool, error) {
		for _, p := range out.Parts {
			pr := partReport{Number: aws.ToInt32(p.PartNumber), Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag), CRC64NVME: aws.ToString(p.ChecksumCRC64NVME), Modified: aws.ToTime(p.LastModified).UTC()}
			u.Parts.List = append(u.Parts.List, pr)
			u.Parts.Count++
			u.Parts.Bytes += pr.Size
		}
		return true, nil
	})
	if s3call.IsNoSuchUpload(err) {
		return nil // completed or aborted since it was listed
	}
	if err != nil {
		return fmt.Errorf("list parts of upload %s of s3://%s/%s: %w", u.UploadID, bucket, key, err)
	}
	folder := ownkeys.SideObjectPrefix(staging, u.UploadID)
	err = s3call.ListObjects(ctx, c, inspectPolicy, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(folder)}, func(out *s3.ListObjectsV2Output) (bool, error) {
		for _, o := range out.Contents {
			k := aws.ToString(o.Key)
			if ownkeys.IsSideObjectOf(staging, u.UploadID, k) {
				u.Side = append(u.Side, sideObject{Key: k, Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified).UTC()})
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("list side objects of upload %s under s3://%s/%s: %w", u.UploadID, bucket, folder, err)
	}
	// Side-object names start with the persist number, zero-padded: the
	// greatest name is the latest persist (of equal numbers, the newest).
	for _, s := range u.Side {
		if u.LatestTail == "" || s.Key > u.LatestTail {
			u.LatestTail = s.Key
		}
	}
	return nil
}

// uploadState says what s3once would do with an upload of the key.
func uploadState(committed bool, u *uploadReport, cutoff time.Duration, now time.Time) (state, action string) {
	last := u.Initiated
	for _, p := range u.Parts.List {
		last = later(last, p.Modified)
	}
	for _, s := range u.Side {
		last = later(last, s.LastModified)
	}
	sweepAt := u.Initiated.Add(cutoff)
	switch {
	case committed:
		return "left-over", fmt.Sprintf("the key holds a committed object, so this upload can never be completed (a retried or changed attempt's); the sweep aborts it once it is older than the cutoff (after %s)", sweepAt.Format(time.RFC3339))
	case now.Sub(u.Initiated) >= cutoff:
		return "left-over", fmt.Sprintf("initiated more than %s ago: the sweep would abort it and delete its side objects now", cutoff)
	}
	return "open", fmt.Sprintf("open, resumable from a token that names it if a runner's checkpoint still holds one (a resume token, or a commit token the commit stage completes); if its writer died on the embedded runner (prism), which keeps no checkpoint, no token survives; the sweep removes it after %s if no run completes it; last written %s", sweepAt.Format(time.RFC3339), last.Format(time.RFC3339))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sweepCommand is the sweep that removes the key's left-overs, on the
// server cf names: the output prefix given (wholeBucket for the root),
// else the key's folder.
func sweepCommand(bucket, prefix, key, staging string, cf clientFlags, cutoff time.Duration) string {
	if prefix == "" {
		if d := path.Dir(key); d != "." {
			prefix = d + "/"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "s3once sweep --bucket %s", shellQuote(bucket))
	if prefix == "" || prefix == wholeBucket {
		b.WriteString(" --whole-bucket")
	} else {
		fmt.Fprintf(&b, " --prefix %s", shellQuote(prefix))
	}
	if staging != s3call.DefaultStagingPrefix {
		fmt.Fprintf(&b, " --staging-prefix %s", shellQuote(staging))
	}
	b.WriteString(cf.args())
	fmt.Fprintf(&b, " --older-than %s --dry-run", formatAge(cutoff))
	return b.String()
}

// formatAge writes a cutoff as sweep's --older-than reads it.
func formatAge(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printKeyReport writes the report as text.
func printKeyReport(w io.Writer, r keyReport) {
	fmt.Fprintf(w, "s3://%s/%s: %s\n", r.Bucket, r.Key, r.State)
	if !r.OwnFileName {
		fmt.Fprintln(w, "  note: the key is not named as s3once names its files")
	}
	if o := r.Object; o != nil {
		fmt.Fprintf(w, "object: %d bytes, ETag %s, last modified %s", o.Size, o.ETag, o.LastModified.Format(time.RFC3339))
		if o.ChecksumType != "" {
			fmt.Fprintf(w, ", checksum type %s", o.ChecksumType)
		}
		if o.CRC64NVME != "" {
			fmt.Fprintf(w, ", CRC64NVME %s (%s)", o.CRC64NVME, o.CRC64NVMEBase64)
		} else {
			fmt.Fprint(w, ", no CRC64NVME given by the server")
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "object: none at the key")
	}
	fmt.Fprintf(w, "open uploads: %d\n", len(r.Uploads))
	for _, u := range r.Uploads {
		fmt.Fprintf(w, "  upload %s, initiated %s: %s\n", u.UploadID, u.Initiated.Format(time.RFC3339), u.State)
		fmt.Fprintf(w, "    parts: %d, %s (%d bytes)\n", u.Parts.Count, humanBytes(u.Parts.Bytes), u.Parts.Bytes)
		for _, p := range u.Parts.List {
			crc := p.CRC64NVME
			if crc == "" {
				crc = "none"
			}
			fmt.Fprintf(w, "      part %d: %d bytes, ETag %s, CRC64NVME %s\n", p.Number, p.Size, p.ETag, crc)
		}
		fmt.Fprintf(w, "    side objects under %s: %d\n", ownkeys.SideObjectPrefix(r.StagingPrefix, u.UploadID), len(u.Side))
		for _, s := range u.Side {
			mark := ""
			if s.Key == u.LatestTail {
				mark = " (latest tail)"
			}
			fmt.Fprintf(w, "      %s: %d bytes, %s%s\n", s.Key, s.Size, s.LastModified.Format(time.RFC3339), mark)
		}
		fmt.Fprintf(w, "    s3once would: %s\n", u.Action)
	}
	fmt.Fprintf(w, "sweep (run without --dry-run to remove): %s\n", r.SweepCommand)
}
