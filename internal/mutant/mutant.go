// Package mutant holds test-only switches that put known past bugs back
// into s3once's protocol code, so that a test can show that the explorer
// (internal/testkit/explore) and the integration tests catch each of them.
//
// The switches exist only in builds with the s3once_mutant build tag. In
// any other build (every shipped binary) the packages that carry mutation
// points do not import this package at all: their switches are constants
// that are always off, and the compiler drops the branches behind them.
// With the tag, a test turns a switch on with Set, and a child process
// built with the tag reads the switches from the S3ONCE_MUTANT environment
// variable when it starts (a comma-separated list of bug names, as String
// prints them).
package mutant

import (
	"fmt"
	"strings"
)

// Bug is one past bug that can be switched back on.
type Bug uint32

// The bugs.
const (
	// AbortOn409: the committer aborts the token's own upload when
	// CompleteMultipartUpload answers 409 ConditionalRequestConflict,
	// losing the file.
	AbortOn409 Bug = 1 << iota
	// DropTail: recovery forgets the token's tail, as Flink's S3 writer did
	// on its recover-for-commit path: the bytes after the last part are lost.
	DropTail
	// ShortSettle: a commit that finds the upload gone and the key empty
	// gives up after a few seconds instead of the SettleTimeout window, and
	// calls the data lost while a completion elsewhere is still landing.
	ShortSettle
	// ReusePersistKey: a failed Persist gives its sequence number back, so
	// the next Persist writes its side object under the failed one's key,
	// where the failed PUT may still land.
	ReusePersistKey
	// NoThrottleBackoff: a call answered SlowDown is sent again at once,
	// without the shared backoff, and the SDK's retry quota is back, so
	// that a storm empties it and calls fail before their ThrottleBudget.
	NoThrottleBackoff
	// NoIfNoneMatch: the committer completes uploads without
	// If-None-Match: *, so a zombie's late completion replaces the object
	// a newer run committed.
	NoIfNoneMatch
	// DefaultRetryQuota: the SDK's default retry quota is back (and
	// nothing else of NoThrottleBackoff): after an outage has spent it, a
	// call that fails once fails for good, however much of its attempts
	// and budget is left.
	DefaultRetryQuota
	// BlindCommit: the committer completes an upload without looking at
	// the key first and without If-None-Match, as a writer that trusts its
	// own run would: a rerun completes again over the files an earlier
	// attempt committed (the zombie overwrite of Kafka Connect's S3 sink,
	// confluentinc/kafka-connect-storage-cloud #800, comes from the same
	// trust).
	BlindCommit
	// BarrierSkipsManifest: the run-wide barrier judges a partition by its
	// listing alone and never reads its manifest, so a rerun that keeps a
	// complete partition's files and adds one more commits it.
	BarrierSkipsManifest
	// MarkerSubset: a settings marker that lacks settings its version
	// always records (cut at a line, edited) matches any run that agrees
	// with what is left of it.
	MarkerSubset
	// PartitionOwnExtOnly: the partition checks count only the files of the
	// run's own extension, so a rerun with another codec or format into a
	// folder without a settings marker adds its files beside the old ones.
	PartitionOwnExtOnly
	// VerifyTrustsListing: verify takes a partition without a manifest as
	// proved by its listing, without reading its files and whether or not
	// its window's completion marker says a manifest should be there.
	VerifyTrustsListing
	// VerifyTrustsCounts: verify --read takes a manifest's record counts
	// as they are, without comparing them with the files'.
	VerifyTrustsCounts
	// TableDiscardOnConflict: the table stage takes a conflict answer
	// from the catalog at its word and removes what the round staged
	// without reloading the table, so a commit that landed but was
	// answered as refused (a catalog or client that retried it) loses
	// its manifest list.
	TableDiscardOnConflict
	// TableTrustStaleHead: the table stage reports a run found in the
	// table as it last committed to it, without reloading it, so a run
	// rolled back past since is reported as in the table and never
	// appended again.
	TableTrustStaleHead
	// TableDiscardOnAmbiguous: the table stage removes what a round
	// staged when the catalog's answer is an error that says nothing of
	// the commit (a 5xx, a timeout, a cancelled call, a reset
	// connection), so a commit that landed before the error loses its
	// manifest list.
	TableDiscardOnAmbiguous
	// TableErrorAsLanded: the table stage takes any error of the
	// catalog's commit as the commit done, so a run whose commit was
	// refused (another writer's, a failed requirement) or never made
	// (SQLITE_BUSY) is reported as appended and is not in the table.
	TableErrorAsLanded
	// TableSkipRunLookup: the table stage commits without looking for
	// its run in the table (snapshot summaries and commit markers), as a
	// writer that keeps its idempotency state only in memory would: a
	// process restarted after its commit landed appends the run again.
	TableSkipRunLookup
)

// All lists every bug, in the order of their values.
var All = []Bug{AbortOn409, DropTail, ShortSettle, ReusePersistKey, NoThrottleBackoff, NoIfNoneMatch, DefaultRetryQuota, BlindCommit,
	BarrierSkipsManifest, MarkerSubset, PartitionOwnExtOnly, VerifyTrustsListing, VerifyTrustsCounts, TableDiscardOnConflict, TableTrustStaleHead,
	TableDiscardOnAmbiguous, TableErrorAsLanded, TableSkipRunLookup}

// EnvVar names the environment variable that switches bugs on in a child
// process built with the s3once_mutant tag.
const EnvVar = "S3ONCE_MUTANT"

// ShortSettleWindow is the settle window under ShortSettle.
const ShortSettleWindow = 5e9 // five seconds, in nanoseconds

func (b Bug) String() string {
	switch b {
	case AbortOn409:
		return "abort-on-409"
	case DropTail:
		return "drop-tail"
	case ShortSettle:
		return "short-settle"
	case ReusePersistKey:
		return "reuse-persist-key"
	case NoThrottleBackoff:
		return "no-throttle-backoff"
	case NoIfNoneMatch:
		return "no-if-none-match"
	case DefaultRetryQuota:
		return "default-retry-quota"
	case BlindCommit:
		return "blind-commit"
	case BarrierSkipsManifest:
		return "barrier-skips-manifest"
	case MarkerSubset:
		return "marker-subset"
	case PartitionOwnExtOnly:
		return "partition-own-ext-only"
	case VerifyTrustsListing:
		return "verify-trusts-listing"
	case VerifyTrustsCounts:
		return "verify-trusts-counts"
	case TableDiscardOnConflict:
		return "table-discard-on-conflict"
	case TableTrustStaleHead:
		return "table-trust-stale-head"
	case TableDiscardOnAmbiguous:
		return "table-discard-on-ambiguous"
	case TableErrorAsLanded:
		return "table-error-as-landed"
	case TableSkipRunLookup:
		return "table-skip-run-lookup"
	}
	return "bugs(mixed)"
}

// Parse reads a comma-separated list of bug names (as String prints them)
// into one set. An empty list is no bug.
func Parse(list string) (Bug, error) {
	var set Bug
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for _, b := range All {
			if b.String() == name {
				set |= b
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("mutant: unknown bug %q (known: %s)", name, names())
		}
	}
	return set, nil
}

func names() string {
	var s []string
	for _, b := range All {
		s = append(s, b.String())
	}
	return strings.Join(s, ", ")
}
