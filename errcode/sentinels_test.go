package errcode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/recoverable"
	"github.com/s3once/s3once/sink"
)

// Every sentinel s3once hands to users carries its code in its message, so
// that an error wrapping it is recognised by its text alone, after a runner
// has turned it into a string.
func TestSentinelsCarryTheirCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code errcode.Code
	}{
		{committer.ErrConflict, errcode.Conflict},
		{committer.ErrRewriteRequired, errcode.RewriteRequired},
		{committer.ErrKeyTaken, errcode.KeyTaken},
		{committer.ErrDataLost, errcode.DataLost},
		{committer.ErrUnconfirmed, errcode.Unconfirmed},
		{committer.ErrConditionalWritesUnsupported, errcode.ConditionalWritesUnsupported},
		{recoverable.ErrNoSuchUpload, errcode.NoSuchUpload},
		{recoverable.ErrPartsChanged, errcode.PartsChanged},
		{recoverable.ErrSideObjectMissing, errcode.SideObjectMissing},
		{recoverable.ErrTailCorrupt, errcode.TailCorrupt},
		{recoverable.ErrPartLimit, errcode.PartLimit},
		{recoverable.ErrClosed, errcode.Closed},
		{recoverable.ErrInvalidToken, errcode.InvalidToken},
		{recoverable.ErrInvalidOptions, errcode.InvalidOptions},
		{recoverable.ErrThrottled, errcode.Throttled},
		{sink.ErrInvalidConfig, errcode.InvalidConfig},
		{sink.ErrFoldersOverlap, errcode.FoldersOverlap},
		{sink.ErrSettingsChanged, errcode.SettingsChanged},
		{sink.ErrPartitionChanged, errcode.PartitionChanged},
		{sink.ErrManifestDamaged, errcode.ManifestDamaged},
		{sink.ErrSettingsDamaged, errcode.SettingsDamaged},
		{sink.ErrCredentialsMissing, errcode.CredentialsMissing},
		{sink.ErrWindowComplete, errcode.WindowComplete},
		{sink.ErrPreflight, errcode.Preflight},
	} {
		typed := &recoverable.Error{Op: "commit", Bucket: "b", Key: "k", UploadID: "u", Hint: "a hint", Err: tc.err}
		text := errors.New(fmt.Errorf("s3once sink: %w", typed).Error())
		if c, ok := errcode.Of(text); !ok || c != tc.code {
			t.Errorf("%q: code %q (%v), want %q", text, c, ok, tc.code)
		}
	}
}

// A configuration error names its code, whatever the problem.
func TestConfigErrorCarriesItsCode(t *testing.T) {
	err := sink.Config{}.Validate()
	if err == nil {
		t.Fatal("an empty Config validates")
	}
	if !errcode.Has(errors.New(err.Error()), errcode.InvalidConfig) {
		t.Fatalf("%q lacks %s", err, errcode.InvalidConfig.Token())
	}
}
