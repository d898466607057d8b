package sink

import (
	"strings"
	"testing"

	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// DisableChecksums on a bucket whose ETags are not MD5s (as under SSE-KMS):
// a part uploaded again with the same bytes could never be recognised, so
// the preflight refuses the combination and names the setting. The same
// bucket with checksums on, or DisableChecksums on a bucket with MD5 ETags,
// passes.
func TestPreflightRefusesDisableChecksumsWithoutMD5ETags(t *testing.T) {
	for _, tc := range []struct {
		name              string
		random, disable   bool
		wantETagsProblems int
	}{
		{"KMS-like ETags, checksums off", true, true, 1},
		{"KMS-like ETags, checksums on", true, false, 0},
		{"MD5 ETags, checksums off", false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := srv.Bucket(t)
			api := s3fault.New(testClient())
			if tc.random {
				api.RandomETags()
			}
			s := testSettings(t, bucket, "out")
			s.DisableChecksums = tc.disable
			err := preflight(preflightContext(t), api, s, &PreflightError{Bucket: bucket})
			n := 0
			if err != nil {
				pe := preflightError(t, err)
				for _, p := range pe.Problems {
					if strings.Contains(p.Check, "part identity") {
						n++
						if !strings.Contains(p.Hint, "DisableChecksums") {
							t.Errorf("hint %q does not name the setting", p.Hint)
						}
					} else {
						t.Errorf("unexpected problem: %+v", p)
					}
				}
			}
			if n != tc.wantETagsProblems {
				t.Fatalf("%d part-identity problems, want %d (err: %v)", n, tc.wantETagsProblems, err)
			}
			checkEmpty(t, bucket)
		})
	}
}
