package committer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/settingsmarker"
	"github.com/s3once/s3once/recoverable"
	"golang.org/x/sync/errgroup"
)

// MinSweepAge is the floor of a sweep's cutoff age: a younger cutoff (a typo
// of 7m for 7d, say) would destroy uploads and side objects that open files
// and checkpoints still reference, so it needs SweepOptions.Force.
const MinSweepAge = time.Hour

// ClockSkewNoise is the clock skew a sweep report treats as none: the Date
// header has a one-second grain, and some servers refresh it only once a
// second, so a skew below it says nothing about either clock.
const ClockSkewNoise = 3 * time.Second

// dateSpread is how far a server's clock may be ahead of the time it sends
// (a Date header, a LastModified): the time has a one-second grain, and some
// servers (versitygw) refresh their Date only once a second, so it may trail
// the server's clock by up to two seconds.
const dateSpread = 2 * time.Second

// clockSlack is how far an explicit cutoff may lie past the server's time
// beyond dateSpread and the round trip that read it, for a late Date
// refresh on a loaded server.
const clockSlack = time.Second

// maxReportedFailures bounds the failures a sweep's error lists one by one.
const maxReportedFailures = 10

// SweepOptions say what a sweep removes.
type SweepOptions struct {
	// Bucket to sweep. Required.
	Bucket string
	// Prefix is the sink's output prefix, a folder ("events" is "events/",
	// never "events-v2/"): uploads under it whose keys are s3once file names
	// (or preflight probes) are swept, never other tools' uploads. Required
	// unless WholeBucket is set.
	Prefix string
	// WholeBucket allows an empty Prefix: every upload in the bucket is
	// swept. Only for buckets the sink owns alone.
	WholeBucket bool
	// StagingPrefix is the folder of the side objects and probes; default
	// recoverable.DefaultStagingPrefix. Only keys s3once writes there (side
	// objects, probes, and the uploads of preflight probes) are removed. It
	// must lie apart from Prefix by the rule the sink applies
	// (ownkeys.CheckStagingApart).
	StagingPrefix string
	// OlderThan is the age, by the server's clock, beyond which an upload
	// (since it was initiated) or a side object (since it was last modified)
	// is stale. It must exceed the longest time a file may stay open until it
	// is committed plus the longest time a checkpoint is retained; see the
	// package documentation. Required unless Cutoff is set.
	OlderThan time.Duration
	// Cutoff, when set, replaces "server time now - OlderThan": whatever was
	// initiated or modified strictly before it is stale. It must not lie after
	// the server's present time, give or take the grain of the time the
	// server sends and the round trip that read it (a few seconds).
	Cutoff time.Time
	// DryRun lists and measures what would be removed, and removes nothing.
	DryRun bool
	// Force allows a cutoff younger than MinSweepAge.
	Force bool
	// KeepRestorable leaves the uploads of file keys that hold an object
	// to the cutoff, like every other upload. By default such an upload is
	// stale whatever its age (its side objects too): the sink completes
	// with If-None-Match, so it can never become its key's object, and a
	// restore of a checkpoint that names it ends in a rewrite of the file
	// (the sink) or in recoverable.ErrNoSuchUpload (a direct user of
	// recoverable and Committer).
	KeepRestorable bool
	// Unconditional says the folder's files were committed without
	// If-None-Match (Options.AllowUnconditional), so an open upload may
	// still replace its key's object: uploads are then judged by the
	// cutoff alone, as with KeepRestorable. A Committer made with
	// AllowUnconditional sweeps that way too.
	Unconditional bool
	// Progress, if set, is called with the report so far after each page of
	// listings; it runs on the sweeping goroutine and must return quickly.
	Progress func(SweepReport)
	// Stale, if set, is called once for each stale item, in a dry run as in
	// a real sweep, whether or not its removal then succeeds. Calls never
	// overlap; each must return quickly.
	Stale func(SweepItem)
}

// SweepItem is one stale thing a sweep found: an upload, a side object or
// probe, or an old version of one.
type SweepItem struct {
	// Kind is "upload", "side object" or "old version".
	Kind string
	Key  string
	// UploadID names an upload; VersionID an old version ("" for others).
	UploadID, VersionID string
	// LeftOver: an upload of a key that holds an object, or a side object
	// of such an upload, stale whatever its age (SweepOptions.KeepRestorable).
	LeftOver bool
	// Bytes: an upload's parts, an object's size (0 for a delete marker).
	Bytes int64
	// Time: when an upload was initiated or an object last modified (zero
	// for an old version).
	Time time.Time
}

// stale reports item to so.Stale, if set.
func (so SweepOptions) stale(item SweepItem) {
	if so.Stale != nil {
		so.Stale(item)
	}
}

// SweepCounts count one kind of thing a sweep looked at.
type SweepCounts struct {
	// Scanned were listed.
	Scanned int
	// Stale were older than the cutoff.
	Stale int
	// Removed were aborted or deleted (0 in a dry run).
	Removed int
	// Kept were younger than the cutoff, or had no date, and were no
	// left-overs.
	Kept int
	// LeftOver of Stale were younger than the cutoff (or had no date), and
	// stale because they are left-overs: uploads of file keys that hold an
	// object, checked when the sweep lists them, and those uploads' side
	// objects (SweepOptions.KeepRestorable).
	LeftOver int
	// NotOwn were listed under the prefixes but are not s3once's (another
	// tool's upload, an object of another name): never touched.
	NotOwn int
	// Bytes is the total size of the stale ones, as listed.
	Bytes int64
	// Failed could not be removed (or, for uploads, not measured).
	Failed int
}

// SweepReport says what a sweep found and did.
type SweepReport struct {
	Bucket, Prefix, StagingPrefix string
	DryRun                        bool
	// ServerNow is the server's clock when the sweep started; ClockSkew is
	// the server's clock minus the local one, zero where they may agree
	// within the grain of the server's time and the round trip that read
	// it, else the least difference they must have.
	ServerNow time.Time
	ClockSkew time.Duration
	// Cutoff: things initiated or modified strictly before it are stale.
	Cutoff      time.Time
	Uploads     SweepCounts
	SideObjects SweepCounts
	// Versions counts the noncurrent versions and delete markers of
	// s3once's staging keys, on a versioned bucket (Options.Versioned).
	Versions SweepCounts
	// Warnings are conditions an operator should look at (lifecycle rules
	// that act sooner than the cutoff, a very short cutoff, ...).
	Warnings []string
}

// Sweep removes what crashed or abandoned writers left behind under a sink's
// prefixes: it aborts the multipart uploads under Prefix that were initiated
// before the cutoff and deletes the side objects under StagingPrefix last
// modified before it. An upload of an s3once file whose key holds an object
// (looked at after the listing) is a left-over whatever its age, and so are
// its side objects: the sink completes with If-None-Match, so such an upload
// can never become its key's object (SweepOptions.KeepRestorable and
// Unconditional leave them to the cutoff). Nothing else younger is touched.
// Ages are judged by the server's clock (the Date of its replies), so a
// skewed local clock cannot make a young upload look old.
//
// The cutoff must exceed how long a file may stay open (until committed)
// plus how long a checkpoint may be retained and restored from: a sweep
// destroys what such a checkpoint references. Sweep warns when the bucket's
// lifecycle rules abort incomplete uploads or expire side objects sooner than
// OlderThan, since those would destroy the same things.
//
// Failures to remove single items do not stop the sweep; they are counted and
// returned together as an error once it is done. The report is filled in as
// far as the sweep got, also when an error is returned.
func (c *Committer) Sweep(ctx context.Context, so SweepOptions) (SweepReport, error) {
	so.StagingPrefix = s3call.StagingPrefix(so.StagingPrefix)
	rep := SweepReport{Bucket: so.Bucket, Prefix: so.Prefix, StagingPrefix: so.StagingPrefix, DryRun: so.DryRun}
	if err := so.validate(); err != nil {
		return rep, err
	}
	where := fmt.Sprintf("s3once sweep s3://%s/%s", so.Bucket, so.Prefix)

	clock, err := c.serverNow(ctx, so.Bucket, so.StagingPrefix)
	if err != nil {
		return rep, fmt.Errorf("%s: read the server's clock: %w", where, err)
	}
	now := clock.server
	rep.ServerNow = now
	rep.ClockSkew = clock.skew().Round(time.Second)
	rep.Cutoff = now.Add(-so.OlderThan)
	if !so.Cutoff.IsZero() {
		if so.Cutoff.After(now.Add(dateSpread + clock.sent.Sub(clock.asked) + clockSlack)) {
			return rep, fmt.Errorf("%s: %w: cutoff %s lies after the server's time %s; it would remove files being written", where, recoverable.ErrInvalidOptions, so.Cutoff.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		rep.Cutoff = so.Cutoff
	}
	age := now.Sub(rep.Cutoff)
	if age < MinSweepAge {
		if !so.Force {
			return rep, fmt.Errorf("%s: %w: the cutoff is only %v old, below the floor of %v; it must exceed the longest time a file stays open plus checkpoint retention (set Force, --force, if this is meant)", where, recoverable.ErrInvalidOptions, age.Round(time.Second), MinSweepAge)
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the cutoff is only %v old; it must exceed the longest time a file stays open plus checkpoint retention, or the sweep destroys uploads that checkpoints still reference", age))
	}
	rep.Warnings = append(rep.Warnings, c.lifecycleWarnings(ctx, so, age)...)

	failures := &failureList{}
	progress := func() {
		if so.Progress != nil {
			so.Progress(rep)
		}
	}
	// Uploads of files under the output prefix, then the uploads the
	// preflight leaves under the staging prefix when killed.
	// The staging folder may lie inside the output's (below a hidden
	// segment, or with WholeBucket): its uploads are the second pass's.
	ext, err := c.folderExt(ctx, so)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", where, err)
	}
	outputUpload := func(key string) uploadKind {
		switch {
		case ownkeys.Under(so.StagingPrefix, key):
			return skipUpload
		case ownkeys.IsFileName(so.Prefix, key) && (ext == "" || ownkeys.HasFileExt(key, ext)):
			return fileUpload
		case ownkeys.IsOutputProbe(so.Prefix, key):
			return probeUpload
		}
		return foreignUpload
	}
	left := &leftovers{on: !so.KeepRestorable && !so.Unconditional && !c.opts.AllowUnconditional, folders: map[string]bool{}}
	if err := c.sweepUploads(ctx, so, ownkeys.Folder(so.Prefix), outputUpload, left, &rep, failures, progress); err != nil {
		return rep, fmt.Errorf("%s: %w", where, err)
	}
	stagingUpload := func(key string) uploadKind {
		if ownkeys.IsStagingProbe(so.StagingPrefix, key) {
			return probeUpload
		}
		return foreignUpload
	}
	if err := c.sweepUploads(ctx, so, ownkeys.Folder(so.StagingPrefix), stagingUpload, left, &rep, failures, progress); err != nil {
		return rep, fmt.Errorf("%s: %w", where, err)
	}
	if err := c.sweepSideObjects(ctx, so, left, &rep, failures, progress); err != nil {
		return rep, fmt.Errorf("%s: %w", where, err)
	}
	c.sweepVersions(ctx, so, &rep, failures)
	if err := failures.err(); err != nil {
		return rep, fmt.Errorf("%s: %d uploads and %d side objects could not be swept: %w", where, rep.Uploads.Failed, rep.SideObjects.Failed, err)
	}
	return rep, nil
}

func (so SweepOptions) validate() error {
	var problems []string
	if so.Bucket == "" {
		problems = append(problems, "Bucket is required")
	}
	if so.Prefix == "" && !so.WholeBucket {
		problems = append(problems, "Prefix is required (an empty prefix sweeps other applications' uploads too; set WholeBucket if the sink owns the bucket)")
	}
	if so.OlderThan <= 0 && so.Cutoff.IsZero() {
		problems = append(problems, "OlderThan must be positive (or set Cutoff)")
	}
	if strings.HasPrefix(so.StagingPrefix, "/") || strings.HasPrefix(so.Prefix, "/") {
		problems = append(problems, fmt.Sprintf("Prefix %q and StagingPrefix %q must not start with '/'", so.Prefix, so.StagingPrefix))
	} else if err := ownkeys.CheckStagingApart(so.Prefix, so.StagingPrefix); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("s3once sweep: %w: %s", recoverable.ErrInvalidOptions, strings.Join(problems, "; "))
	}
	return nil
}

// failureList keeps the first failures of a sweep.
type failureList struct {
	mu    sync.Mutex
	n     int
	first []error
}

func (f *failureList) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if len(f.first) < maxReportedFailures {
		f.first = append(f.first, err)
	}
}

func (f *failureList) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return nil
	}
	errs := f.first
	if f.n > len(errs) {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("... and %d more", f.n-len(errs)))
	}
	return errors.Join(errs...)
}

// uploadKind is what a sweep makes of an upload's key.
type uploadKind int

const (
	skipUpload    uploadKind = iota // another pass's
	foreignUpload                   // not s3once's: never touched
	probeUpload                     // a preflight probe's
	fileUpload                      // an s3once file's
)

// leftovers are the uploads of file keys that hold an object, which a sweep
// removes whatever their age (when on), by their side objects' folders.
type leftovers struct {
	on      bool
	mu      sync.Mutex
	folders map[string]bool // ownkeys.SideObjectPrefix of each upload
}

func (l *leftovers) add(staging, uploadID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.folders[ownkeys.SideObjectPrefix(staging, uploadID)] = true
}

// holds reports whether key is a side object of a left-over upload.
func (l *leftovers) holds(staging, key string) bool {
	if !ownkeys.IsSideObject(staging, key) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.folders[key[:strings.LastIndexByte(key, '/')+1]]
}

// sweepUploads aborts the stale multipart uploads under folder whose keys are
// s3once's (kind); the others are counted as NotOwn and left alone. With
// left.on, the young uploads of file keys are stale too where their key
// holds an object (one HEAD per key, after the listing), and are recorded
// in left so that their side objects go as well.
//
// The listing sends no Prefix: MinIO matches a listing's Prefix as a whole
// key, so "out/" would list none of the uploads under out/. It starts after
// the folder's name instead (KeyMarker: every key under the folder sorts
// after it), keeps only the keys under the folder, and stops after the first
// page that ends past the folder. The cost over a prefixed listing is at
// most one page of other keys' uploads; a server that ignored the marker
// would cost the pages sorted before the folder too, never a wrong answer.
func (c *Committer) sweepUploads(ctx context.Context, so SweepOptions, folder string, kind func(key string) uploadKind, left *leftovers, rep *SweepReport, failures *failureList, progress func()) error {
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(so.Bucket)}
	if folder != "" {
		in.KeyMarker = aws.String(folder)
	}
	err := s3call.ListUploads(ctx, c.client, c.policy(), in, func(out *s3.ListMultipartUploadsOutput) (bool, error) {
		var stale []types.MultipartUpload
		young := map[string][]types.MultipartUpload{} // by key: files' uploads to look at
		past := false                                 // the page ends past the folder
		for _, u := range out.Uploads {
			key := aws.ToString(u.Key)
			if !strings.HasPrefix(key, folder) {
				past = key > folder
				continue
			}
			past = false
			k := kind(key)
			if k == skipUpload {
				continue
			}
			rep.Uploads.Scanned++
			switch {
			case k == foreignUpload:
				rep.Uploads.NotOwn++
			case u.Initiated != nil && u.Initiated.Before(rep.Cutoff):
				rep.Uploads.Stale++
				stale = append(stale, u)
			case k == fileUpload && left.on:
				young[key] = append(young[key], u)
			default:
				rep.Uploads.Kept++
			}
		}
		var mu sync.Mutex
		sweep := func(u types.MultipartUpload, leftOver bool) {
			bytes, removed, err := c.sweepUpload(ctx, so, u)
			if leftOver && err == nil {
				left.add(so.StagingPrefix, aws.ToString(u.UploadId))
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Uploads.Bytes += bytes
			so.stale(SweepItem{Kind: "upload", Key: aws.ToString(u.Key), UploadID: aws.ToString(u.UploadId), Bytes: bytes, Time: aws.ToTime(u.Initiated), LeftOver: leftOver})
			if removed {
				rep.Uploads.Removed++
			}
			if err != nil {
				rep.Uploads.Failed++
				failures.add(err)
			}
		}
		var g errgroup.Group
		g.SetLimit(c.opts.SweepConcurrency)
		for _, u := range stale {
			g.Go(func() error {
				sweep(u, false)
				return nil // counted; the sweep goes on
			})
		}
		for key, us := range young {
			g.Go(func() error {
				f, err := c.b.Head(ctx, so.Bucket, key)
				mu.Lock()
				switch {
				case err != nil:
					rep.Uploads.Kept += len(us)
					rep.Uploads.Failed += len(us)
					failures.add(&recoverable.Error{Op: "sweep", Bucket: so.Bucket, Key: key, UploadID: aws.ToString(us[0].UploadId),
						Err: fmt.Errorf("look at the key, to tell whether its %d young uploads are left-overs: %w", len(us), err)})
				case f.Exists:
					rep.Uploads.Stale += len(us)
					rep.Uploads.LeftOver += len(us)
				default:
					rep.Uploads.Kept += len(us)
				}
				mu.Unlock()
				if err != nil || !f.Exists {
					return nil
				}
				for _, u := range us {
					sweep(u, true)
				}
				return nil
			})
		}
		_ = g.Wait()
		progress()
		return !past, ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("list multipart uploads: %w", err)
	}
	return nil
}

// sweepUpload measures one stale upload and, unless this is a dry run,
// aborts it. An upload that is gone by then was removed by someone else.
func (c *Committer) sweepUpload(ctx context.Context, so SweepOptions, u types.MultipartUpload) (bytes int64, removed bool, err error) {
	key, id := aws.ToString(u.Key), aws.ToString(u.UploadId)
	failed := func(what string, err error) error {
		return &recoverable.Error{Op: "sweep", Bucket: so.Bucket, Key: key, UploadID: id, Err: fmt.Errorf("%s: %w", what, err)}
	}
	in := &s3.ListPartsInput{Bucket: aws.String(so.Bucket), Key: aws.String(key), UploadId: aws.String(id)}
	err = s3call.ListParts(ctx, c.client, c.policy(), in, func(out *s3.ListPartsOutput) (bool, error) {
		for _, p := range out.Parts {
			bytes += aws.ToInt64(p.Size)
		}
		return true, nil
	})
	if err != nil {
		if s3call.IsNoSuchUpload(err) {
			return bytes, false, nil
		}
		return bytes, false, failed("list parts", err)
	}
	if so.DryRun {
		return bytes, false, nil
	}
	_, err = call(ctx, c, "abort upload", func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
		return c.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(so.Bucket), Key: aws.String(key), UploadId: aws.String(id),
		})
	})
	if err != nil {
		if s3call.IsNoSuchUpload(err) {
			return bytes, false, nil
		}
		return bytes, false, failed("abort", err)
	}
	return bytes, true, nil
}

// sweepSideObjects deletes the stale side objects and probes under the staging
// prefix, and the side objects of the left-over uploads whatever their age;
// other keys there are counted as NotOwn and left alone.
func (c *Committer) sweepSideObjects(ctx context.Context, so SweepOptions, left *leftovers, rep *SweepReport, failures *failureList, progress func()) error {
	return c.b.List(ctx, so.Bucket, ownkeys.Folder(so.StagingPrefix), func(page []s3bucket.Object) error {
		var stale []string
		for _, o := range page {
			rep.SideObjects.Scanned++
			if !ownkeys.IsOwnStaging(so.StagingPrefix, o.Key) {
				rep.SideObjects.NotOwn++
				continue
			}
			old := !o.Modified.IsZero() && o.Modified.Before(rep.Cutoff)
			leftOver := !old && left.holds(so.StagingPrefix, o.Key)
			if !old && !leftOver {
				rep.SideObjects.Kept++
				continue
			}
			rep.SideObjects.Stale++
			if leftOver {
				rep.SideObjects.LeftOver++
			}
			rep.SideObjects.Bytes += o.Size
			stale = append(stale, o.Key)
			so.stale(SweepItem{Kind: "side object", Key: o.Key, Bytes: o.Size, Time: o.Modified, LeftOver: leftOver})
		}
		if !so.DryRun && len(stale) > 0 {
			n, err := c.b.DeleteKeys(ctx, so.Bucket, stale)
			rep.SideObjects.Removed += n
			if err != nil {
				rep.SideObjects.Failed += len(stale) - n
				failures.add(fmt.Errorf("delete side objects: %w", err))
			}
		}
		progress()
		return ctx.Err()
	})
}

// serverClock is one reading of the server's clock: the time it sent, and
// this machine's clock just before the request and just after the reply.
type serverClock struct {
	server      time.Time
	asked, sent time.Time
}

// skew is the server's clock minus this machine's, as far as the reading
// tells it: the server's clock stood somewhere in [server, server +
// dateSpread) at some moment of [asked, sent] here, so clocks that may agree
// give zero, and clocks that cannot give the least difference the reading
// allows. A slow round trip (a loaded machine, retries) widens the reading;
// it never makes agreeing clocks look apart.
func (c serverClock) skew() time.Duration {
	switch {
	case c.server.After(c.sent):
		return c.server.Sub(c.sent)
	case c.server.Add(dateSpread).Before(c.asked):
		return c.server.Add(dateSpread).Sub(c.asked)
	}
	return 0
}

// serverNow reads the server's clock: the Date of a cheap listing's reply, or,
// where a server sends none, the LastModified of a probe object written (and
// deleted) under the staging prefix.
func (c *Committer) serverNow(ctx context.Context, bucket, staging string) (serverClock, error) {
	asked := time.Now()
	out, err := call(ctx, c, "list objects", func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
		return c.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(ownkeys.Folder(staging)), MaxKeys: aws.Int32(1)})
	})
	if err != nil {
		return serverClock{}, err
	}
	if t, ok := awsmiddleware.GetServerTime(out.ResultMetadata); ok && !t.IsZero() {
		return serverClock{server: t, asked: asked, sent: time.Now()}, nil
	}
	asked = time.Now()
	key := ownkeys.ClockProbeKey(staging, randomName())
	if _, err := call(ctx, c, "put clock probe", func(ctx context.Context) (*s3.PutObjectOutput, error) {
		return c.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("s3once clock probe; safe to delete\n")})
	}); err != nil {
		return serverClock{}, err
	}
	defer func() {
		cctx, cancel := c.cleanupContext(ctx)
		defer cancel()
		_, _ = call(cctx, c, "delete clock probe", func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
			return c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		})
	}()
	head, err := call(ctx, c, "head clock probe", func(ctx context.Context) (*s3.HeadObjectOutput, error) {
		return c.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	})
	if err != nil {
		return serverClock{}, err
	}
	if head.LastModified == nil {
		return serverClock{}, errors.New("the server sends neither a Date header nor a LastModified time")
	}
	return serverClock{server: *head.LastModified, asked: asked, sent: time.Now()}, nil
}

// lifecycleWarnings reads the bucket's lifecycle rules and warns about those
// that remove what the sweep keeps: incomplete uploads under the prefix, or
// objects under the staging prefix, sooner than age.
func (c *Committer) lifecycleWarnings(ctx context.Context, so SweepOptions, age time.Duration) []string {
	out, err := call(ctx, c, "get lifecycle rules", func(ctx context.Context) (*s3.GetBucketLifecycleConfigurationOutput, error) {
		return c.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(so.Bucket)})
	})
	if err != nil {
		switch {
		case s3call.CodeOf(err) == s3call.NotFound, s3call.IsNotImplemented(err):
			return nil // no rules, or a server without lifecycle rules
		}
		return []string{fmt.Sprintf("could not read the bucket's lifecycle rules (%v); check by hand that none aborts incomplete uploads or expires objects under the sink's prefixes sooner than %v", err, age)}
	}
	var warns []string
	for _, r := range out.Rules {
		if r.Status != types.ExpirationStatusEnabled {
			continue
		}
		prefix := rulePrefix(r)
		name := aws.ToString(r.ID)
		if a := r.AbortIncompleteMultipartUpload; a != nil && a.DaysAfterInitiation != nil {
			d := time.Duration(*a.DaysAfterInitiation) * 24 * time.Hour
			if d < age && overlaps(prefix, so.Prefix) {
				warns = append(warns, fmt.Sprintf("lifecycle rule %q aborts incomplete multipart uploads under %q after %d days, sooner than the sweep's cutoff of %v: it can destroy uploads that checkpoints still reference", name, prefix, *a.DaysAfterInitiation, age))
			}
		}
		if e := r.Expiration; e != nil && e.Days != nil {
			d := time.Duration(*e.Days) * 24 * time.Hour
			if d < age && overlaps(prefix, so.StagingPrefix) {
				warns = append(warns, fmt.Sprintf("lifecycle rule %q expires objects under %q after %d days, sooner than the sweep's cutoff of %v: it can delete side objects that checkpoints still reference", name, prefix, *e.Days, age))
			}
		}
	}
	return warns
}

// rulePrefix is the key prefix a lifecycle rule applies to ("" for all keys).
func rulePrefix(r types.LifecycleRule) string {
	if f := r.Filter; f != nil {
		if f.Prefix != nil {
			return *f.Prefix
		}
		if f.And != nil && f.And.Prefix != nil {
			return *f.And.Prefix
		}
		return ""
	}
	return aws.ToString(r.Prefix)
}

// overlaps reports whether some key can lie under both a lifecycle rule's
// prefix (a plain string, as S3 matches it) and a sweep's folder.
func overlaps(rule, folder string) bool {
	f := ownkeys.Folder(folder)
	return strings.HasPrefix(rule, f) || strings.HasPrefix(f, rule)
}

// folderExt is the extension of the folder's files, from its settings
// marker's file-names setting: an upload named like an s3once file but
// ending otherwise (a user's "...-file-00099.jsonl.gz.other") is not the
// sink's, and the sweep leaves it. "" where the folder has no marker yet (an
// earlier release's folder, or a first run that stopped before writing it):
// then any name of the file-name shape is taken for the sink's.
func (c *Committer) folderExt(ctx context.Context, so SweepOptions) (string, error) {
	key := ownkeys.SettingsKey(so.Prefix)
	body, found, err := c.b.ReadObject(ctx, so.Bucket, key, settingsmarker.MaxBytes+1)
	if err != nil {
		return "", fmt.Errorf("read the settings marker s3://%s/%s, which names the files' extension (the sweep needs s3:GetObject on it; check the credentials and run again): %w", so.Bucket, key, err)
	}
	if !found {
		return "", nil
	}
	fp, err := settingsmarker.Decode(body)
	if err != nil {
		return "", fmt.Errorf("the settings marker s3://%s/%s does not decode, so the sweep cannot tell the sink's uploads from others named like them: written by a later s3once (sweep with a newer one) or damaged: %w", so.Bucket, key, err)
	}
	names, _ := fp.Get("file-names")
	ext, ok := ownkeys.FileNamesExt(names)
	if !ok {
		return "", fmt.Errorf("the settings marker s3://%s/%s names files %q, a template this s3once does not know, so the sweep cannot tell the sink's uploads from others named like them: sweep with a newer s3once", so.Bucket, key, names)
	}
	return ext, nil
}
