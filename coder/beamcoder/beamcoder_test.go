package coder

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/recoverable"
)

func TestMain(m *testing.M) {
	ptest.Main(m)
}

func init() {
	register.Function1x1(passResume)
	register.Function1x1(passCommit)
}

// passResume and passCommit hand tokens on; between them and their input the
// runner encodes and decodes every element.
func passResume(r recoverable.ResumeRecoverable) recoverable.ResumeRecoverable { return r }
func passCommit(c recoverable.CommitRecoverable) recoverable.CommitRecoverable { return c }

// TestBeamUsesThisCoder checks that Beam encodes a token with EncodeResume and
// EncodeCommit (rather than its schema coder) and decodes it back.
func TestBeamUsesThisCoder(t *testing.T) {
	for _, tc := range []struct {
		value any
		ours  func() ([]byte, error)
	}{
		{resumeCases()[1].token, func() ([]byte, error) { return EncodeResume(resumeCases()[1].token) }},
		{commitCases()[0].token, func() ([]byte, error) { return EncodeCommit(commitCases()[0].token) }},
	} {
		typ := reflect.TypeOf(tc.value)
		var buf bytes.Buffer
		if err := beam.NewElementEncoder(typ).Encode(tc.value, &buf); err != nil {
			t.Fatalf("%v: Beam encode: %v", typ, err)
		}
		want, err := tc.ours()
		if err != nil {
			t.Fatal(err)
		}
		// A custom coder's bytes are length-prefixed in the element stream.
		if !bytes.HasSuffix(buf.Bytes(), want) || buf.Len()-len(want) > 3 {
			t.Fatalf("%v: Beam wrote %x, want this package's encoding %x behind a length", typ, buf.Bytes(), want)
		}
		got, err := beam.NewElementDecoder(typ).Decode(&buf)
		if err != nil {
			t.Fatalf("%v: Beam decode: %v", typ, err)
		}
		if !reflect.DeepEqual(got, tc.value) {
			t.Fatalf("%v: Beam decoded %+v, want %+v", typ, got, tc.value)
		}
	}
}

// TestPrismCarriesTokens runs tokens through a pipeline on the prism runner, as
// PCollection elements across a shuffle, and checks they come out unchanged.
func TestPrismCarriesTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the prism runner")
	}
	var resumes, commits []any
	for _, c := range resumeCases() {
		resumes = append(resumes, c.token)
	}
	resumes = append(resumes, largestResume())
	for _, c := range commitCases() {
		commits = append(commits, c.token)
	}

	p, s := beam.NewPipelineWithRoot()
	r := beam.ParDo(s, passResume, beam.Reshuffle(s, beam.Create(s, resumes...)))
	passert.Equals(s, r, resumes...)
	c := beam.ParDo(s, passCommit, beam.Reshuffle(s, beam.Create(s, commits...)))
	passert.Equals(s, c, commits...)
	ptest.RunAndValidate(t, p)
}
