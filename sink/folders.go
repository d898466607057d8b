package sink

import (
	"fmt"
	"sync"
	"weak"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
)

// ErrFoldersOverlap is wrapped (with ErrInvalidConfig) by TryWrite's error
// when a second sink of the same pipeline would write into a folder another
// sink of it writes, or keep its staging there.
var ErrFoldersOverlap = errcode.New(errcode.FoldersOverlap, "two sinks of one pipeline share a folder")

// folderClaim is what one Write of a pipeline holds: its output folder and
// its staging folder, in its bucket.
type folderClaim struct {
	bucket, prefix, staging string
	scope                   string
}

// claims holds, per pipeline under construction, the folders its sinks
// write. Pipelines are keyed by a weak pointer to their graph, so a pipeline
// that is dropped takes its claims with it, and two pipelines built in one
// process (tests do) never see each other's.
var (
	claimsMu sync.Mutex
	claims   = map[weak.Pointer[graph.Graph]][]folderClaim{}
)

// claimFolders records the sink's folders for the pipeline s belongs to, and
// refuses them if another sink of that pipeline already writes into one of
// them. Two sinks conflict, in one bucket, when one's output folder holds
// the other's (the same folder included), or when one's staging folder lies
// where the other's output is (see ownkeys.CheckStagingApart); sharing a
// staging folder is fine (side objects are named after their upload). When
// the pipeline's identity cannot be read, nothing is recorded.
func claimFolders(s beam.Scope, st settings) error {
	g := pipelineOf(s)
	if g == nil {
		return nil
	}
	mine := folderClaim{bucket: st.Bucket, prefix: st.Prefix, staging: st.StagingPrefix, scope: s.String()}
	key := weak.Make(g)
	claimsMu.Lock()
	defer claimsMu.Unlock()
	for k := range claims {
		if k.Value() == nil {
			delete(claims, k)
		}
	}
	for _, other := range claims[key] {
		if why := clash(mine, other); why != "" {
			return fmt.Errorf("%w: %w: %s; each Write needs folders of its own (one Write with a Destination writes several folders under one Prefix)", ErrInvalidConfig, ErrFoldersOverlap, why)
		}
	}
	claims[key] = append(claims[key], mine)
	return nil
}

// clash says why sink a (being added) and sink b (added earlier to the same
// pipeline) cannot both write, or "".
func clash(a, b folderClaim) string {
	if a.bucket != b.bucket {
		return ""
	}
	earlier := fmt.Sprintf("an earlier Write of this pipeline (in scope %s)", b.scope)
	switch {
	case ownkeys.SameFolder(a.prefix, b.prefix):
		return fmt.Sprintf("this Write and %s both write Prefix %q of bucket %q", earlier, a.prefix, a.bucket)
	case ownkeys.Overlap(a.prefix, b.prefix):
		return fmt.Sprintf("this Write's Prefix %q and the Prefix %q of %s overlap in bucket %q: one folder holds the other", a.prefix, b.prefix, earlier, a.bucket)
	case ownkeys.CheckStagingApart(b.prefix, a.staging) != nil:
		return fmt.Sprintf("this Write's StagingPrefix %q lies in the output folder %q of %s, in bucket %q", a.staging, b.prefix, earlier, a.bucket)
	case ownkeys.CheckStagingApart(a.prefix, b.staging) != nil:
		return fmt.Sprintf("this Write's Prefix %q holds the StagingPrefix %q of %s, in bucket %q", a.prefix, b.staging, earlier, a.bucket)
	}
	return ""
}
