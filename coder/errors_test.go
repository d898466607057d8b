package coder

import (
	"errors"
	"testing"

	"github.com/s3once/s3once/internal/frame"
	"github.com/s3once/s3once/recoverable"
)

var sentinels = []error{ErrBadMagic, ErrVersion, ErrTruncated, ErrChecksum, ErrTooLarge, ErrMalformed}

// refusalKind returns the one sentinel err matches, or fails t when err is nil,
// does not match recoverable.ErrInvalidToken, or matches no or several
// sentinels.
func refusalKind(t testing.TB, err error) error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error")
	}
	if !errors.Is(err, recoverable.ErrInvalidToken) {
		t.Fatalf("error %q does not match recoverable.ErrInvalidToken", err)
	}
	var found []error
	for _, s := range sentinels {
		if errors.Is(err, s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("error %q matches %d sentinels %v, want exactly one", err, len(found), found)
	}
	return found[0]
}

// wantRefusal fails t unless err is a refusal of the given kind.
func wantRefusal(t testing.TB, err, kind error) {
	t.Helper()
	if got := refusalKind(t, err); got != kind {
		t.Fatalf("error %q is %q, want %q", err, got, kind)
	}
}

// frameOf frames payload p as version v of f.
func frameOf(f frame.Framing, v byte, p []byte) ([]byte, error) {
	b, err := f.Begin(v, len(p))
	if err != nil {
		return nil, err
	}
	return f.End(append(b, p...))
}
