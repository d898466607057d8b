package preflight

// The preflight's look at the bucket's own settings: whether it requires
// encryption headers, whether it keeps versions or locks objects, and
// whether the configured owner owns it.

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/s3req"
)

// checkBucketSettings runs after the writing calls were probed.
func (p *prober) checkBucketSettings(ctx context.Context) {
	if p.fatal {
		return
	}
	p.explainRefusals(ctx)
	p.checkVersioning(ctx)
}

// denied reports whether a recorded problem is a refusal (403).
func denied(pr Problem) bool {
	return s3call.CodeOf(pr.Err) == s3call.AccessDenied
}

// explainRefusals looks for the reasons of refused writes that are not
// missing permissions: a bucket policy that requires encryption headers
// (the write is tried again with each kind of encryption the configuration
// does not ask for; one that succeeds names the setting), and an
// ExpectedBucketOwner that does not own the bucket.
func (p *prober) explainRefusals(ctx context.Context) {
	var refused []int
	for i, pr := range p.r.Problems {
		if denied(pr) && (strings.HasPrefix(pr.Check, "create a multipart upload") || strings.HasPrefix(pr.Check, "put a side object")) {
			refused = append(refused, i)
		}
	}
	req := p.t
	if req.ExpectedBucketOwner != "" {
		for i, pr := range p.r.Problems {
			if denied(pr) {
				p.r.Problems[i].Hint = joinHint(pr.Hint, fmt.Sprintf("or the bucket's owner is not Config.ExpectedBucketOwner %s (S3 refuses every call naming another owner)", req.ExpectedBucketOwner))
			}
		}
	}
	if len(refused) == 0 || req.CustomerKey {
		return
	}
	for _, mode := range []string{s3req.SSEKMS, s3req.SSES3} {
		if mode == req.Encryption {
			continue
		}
		key := ownkeys.PreflightSideKey(p.t.StagingPrefix, p.id+"-sse")
		body := []byte("s3once preflight encryption probe; safe to delete\n")
		if err := p.probes.Put(ctx, key, body, false, mode); err != nil {
			continue
		}
		p.objects = append(p.objects, key)
		what := "without encryption headers"
		if req.Encryption != "" {
			what = "with Encryption " + req.Encryption
		}
		for _, i := range refused {
			p.r.Problems[i].Permission = ""
			p.r.Problems[i].Hint = joinHint(p.r.Problems[i].Hint,
				fmt.Sprintf("the bucket refuses uploads %s and takes them with x-amz-server-side-encryption: %s (a bucket policy requires it): set Config.Encryption to %q", what, mode, mode))
		}
		return
	}
}

func joinHint(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// checkVersioning reads the bucket's versioning and Object Lock settings.
// A bucket that keeps versions needs Config.VersionedBucket, or every
// deleted side object and probe stays behind as a billed noncurrent
// version; with it, the listing of versions must be allowed. Object Lock
// with a default retention forbids removing any version until it ends, so
// VersionedBucket cannot work there and is refused; without it, the old
// versions stay until their retention ends (see the package
// documentation). A server or a policy that does not let the versioning be
// read is no problem unless VersionedBucket is set.
func (p *prober) checkVersioning(ctx context.Context) {
	if !p.probes.ReadsBucketSettings() {
		return
	}
	bucket := p.t.Bucket
	versioned := p.t.VersionedBucket
	status, err := p.probes.Versioning(ctx)
	if err != nil {
		if versioned {
			p.classify("read the bucket's versioning", bucket, "", "s3:GetBucketVersioning", err)
		}
		return
	}
	keeps := status == types.BucketVersioningStatusEnabled || status == types.BucketVersioningStatusSuspended
	// A bucket without Object Lock answers this with an error: no retention.
	retention, _ := p.probes.DefaultRetention(ctx)
	switch {
	case retention != "" && versioned:
		p.add("remove old versions under Object Lock", "s3://"+bucket, "",
			"unset Config.VersionedBucket: no version can be removed before its retention ends; the side objects' old versions then stay until it does, and a lifecycle rule expiring noncurrent versions under the staging prefix removes them after",
			fmt.Errorf("the bucket has Object Lock with a default retention (%s)", retention))
	case retention != "":
		// Nothing s3once writes can be removed for good before the retention
		// ends; deletes leave delete markers. Documented, not refused.
	case keeps && !versioned:
		p.add("find the bucket's versioning", "s3://"+bucket, "",
			"set Config.VersionedBucket, so that the clean-up and the sweep remove the old versions of s3once's side objects and probes; without it each one stays as a billed noncurrent version",
			fmt.Errorf("versioning is %s on the bucket", status))
	case versioned:
		staging := ownkeys.Folder(p.t.StagingPrefix)
		p.check(ctx, "list object versions under the staging prefix", bucket, staging, "s3:ListBucketVersions", func(ctx context.Context) error {
			return p.probes.ListVersions(ctx, staging)
		})
	}
}
