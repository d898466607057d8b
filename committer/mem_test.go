package committer_test

import (
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// fakeTests are the committer's protocol tests that also run against the
// in-memory S3 (internal/testkit/s3mem). Left out: TestServerKilledDuringComplete
// (it kills a server process) and TestSweepUnderFaults (it makes a second
// bucket through the real server).
var fakeTests = []struct {
	name string
	fn   func(*testing.T)
}{
	{"CommitCreatesVerifiedObjectAndDeletesSideObjects", TestCommitCreatesVerifiedObjectAndDeletesSideObjects},
	{"CommitTwice", TestCommitTwice},
	{"CommitAfterAnotherAttemptWithSameBytes", TestCommitAfterAnotherAttemptWithSameBytes},
	{"CommitAfterAnotherAttemptWithDifferentBytes", TestCommitAfterAnotherAttemptWithDifferentBytes},
	{"CommitUploadGoneAndNoObjectIsDataLost", TestCommitUploadGoneAndNoObjectIsDataLost},
	{"CommitDetectsOverwrittenPart", TestCommitDetectsOverwrittenPart},
	{"CommitEmptyFile", TestCommitEmptyFile},
	{"CommitRejectsInvalidTokens", TestCommitRejectsInvalidTokens},
	{"CommitWithoutChecksumsOnTheWire", TestCommitWithoutChecksumsOnTheWire},
	{"CommitReadsBackWhereServerKeepsNoChecksum", TestCommitReadsBackWhereServerKeepsNoChecksum},
	{"Preflight", TestPreflight},
	{"CommitConflictIsTyped", TestCommitConflictIsTyped},
	{"CommitSurvivesOne409OfEachCode", TestCommitSurvivesOne409OfEachCode},
	{"ConflictWithAWinnerAtTheKey", TestConflictWithAWinnerAtTheKey},
	{"ForgedCRCIsKeyTaken", TestForgedCRCIsKeyTaken},
	{"SameBytesOtherPartSizeIsCommitted", TestSameBytesOtherPartSizeIsCommitted},
	{"CommitHonoursCancelledContext", TestCommitHonoursCancelledContext},
	{"FaultOnEachCallOfTheCommitPath", TestFaultOnEachCallOfTheCommitPath},
	{"PersistentFaultsOnEachOperation", TestPersistentFaultsOnEachOperation},
	{"PreflightReportsProbeLeftBehind", TestPreflightReportsProbeLeftBehind},
	{"RaceDifferentBytesOneWinner", TestRaceDifferentBytesOneWinner},
	{"RaceSameBytesOneCreatorOthersCommitted", TestRaceSameBytesOneCreatorOthersCommitted},
	{"RaceSameUpload", TestRaceSameUpload},
	{"SweepRemovesExactlyTheStale", TestSweepRemovesExactlyTheStale},
	{"SweepOlderThanByServerClock", TestSweepOlderThanByServerClock},
	{"SweepRefusesBadOptions", TestSweepRefusesBadOptions},
	{"SweepLeavesForeignUploadsNamedLikeFiles", TestSweepLeavesForeignUploadsNamedLikeFiles},
	{"SweepWithoutOrWithBadMarker", TestSweepWithoutOrWithBadMarker},
	{"SweepLeftOverUploads", TestSweepLeftOverUploads},
	{"SweepWarnsAboutLifecycleRules", TestSweepWarnsAboutLifecycleRules},
}

const fakePrefix = "TestOnFake/"

// TestOnFake runs the committer's protocol tests against the in-memory S3,
// each newEnv getting a fresh Fake whose listings page two entries at a time.
// A difference from the real server is a bug of the Fake or a quirk of the
// server, written down in s3mem's package documentation.
func TestOnFake(t *testing.T) {
	for _, tc := range fakeTests {
		t.Run(tc.name, tc.fn)
	}
}

// onFake returns an env over a new Fake when t runs under TestOnFake, else nil.
func onFake(t *testing.T) *env {
	if !strings.HasPrefix(t.Name(), fakePrefix) {
		return nil
	}
	fake := s3mem.New(s3mem.Options{PageSize: 2})
	return &env{t: t, client: fake.NewClient(s3mem.ClientOptions{}), bucket: fake.Bucket()}
}
