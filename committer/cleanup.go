package committer

import (
	"context"
	"fmt"

	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/recoverable"
)

// deleteSideObjects deletes the side objects of the token's upload. The token
// is untrusted: only keys under the committer's own staging prefix, in the
// upload's folder and named as side objects are (ownkeys.IsSideObjectOf),
// are deleted. A token that names another staging prefix gets an error
// wrapping recoverable.ErrForeignStaging and nothing is deleted: its side
// objects (of tokens taken before a change of StagingPrefix, say) are left
// to a sweep of that prefix. A token without a staging prefix has none.
func (c *Committer) deleteSideObjects(ctx context.Context, cr recoverable.CommitToken) (int, error) {
	if cr.StagingPrefix == "" {
		return 0, nil
	}
	staging := c.opts.StagingPrefix
	if !ownkeys.SameFolder(cr.StagingPrefix, staging) {
		return 0, fmt.Errorf("%w: %q, the committer's is %q; nothing was deleted (a sweep with --staging-prefix %q removes side objects of tokens taken before a change)",
			recoverable.ErrForeignStaging, cr.StagingPrefix, staging, cr.StagingPrefix)
	}
	prefix := ownkeys.SideObjectPrefix(staging, cr.UploadID)
	var keys []string
	err := c.b.List(ctx, cr.Bucket, prefix, func(page []s3bucket.Object) error {
		for _, o := range page {
			if ownkeys.IsSideObjectOf(staging, cr.UploadID, o.Key) {
				keys = append(keys, o.Key)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list side objects under %s: %w", prefix, err)
	}
	n, err := c.b.DeleteKeys(ctx, cr.Bucket, keys)
	if err != nil {
		return n, fmt.Errorf("delete side objects under %s: %w", prefix, err)
	}
	if _, err := c.purgeVersions(ctx, cr.Bucket, prefix, func(k string) bool { return ownkeys.IsSideObjectOf(staging, cr.UploadID, k) }, false, nil); err != nil {
		return n, err
	}
	return n, nil
}
