package beamcoder

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/coder"
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

// TestBeamUsesThisCoder checks that Beam encodes a token with coder.EncodeResume
// and coder.EncodeCommit (rather than its schema coder) and decodes it back.
func TestBeamUsesThisCoder(t *testing.T) {
	for _, tc := range []struct {
		value any
		ours  func() ([]byte, error)
	}{
		{resumes(t)[1], func() ([]byte, error) { return coder.EncodeResume(resumes(t)[1]) }},
		{commits(t)[0], func() ([]byte, error) { return coder.EncodeCommit(commits(t)[0]) }},
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
			t.Fatalf("%v: Beam wrote %x, want package coder's encoding %x behind a length", typ, buf.Bytes(), want)
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
	var resumeElems, commitElems []any
	for _, r := range resumes(t) {
		resumeElems = append(resumeElems, r)
	}
	resumeElems = append(resumeElems, largestResume())
	for _, c := range commits(t) {
		commitElems = append(commitElems, c)
	}

	p, s := beam.NewPipelineWithRoot()
	r := beam.ParDo(s, passResume, beam.Reshuffle(s, beam.Create(s, resumeElems...)))
	passert.Equals(s, r, resumeElems...)
	c := beam.ParDo(s, passCommit, beam.Reshuffle(s, beam.Create(s, commitElems...)))
	passert.Equals(s, c, commitElems...)
	ptest.RunAndValidate(t, p)
}

// resumes and commits decode package coder's golden files, in the order of
// their names, so these tests carry the same tokens as coder's own.
func resumes(t *testing.T) []recoverable.ResumeRecoverable {
	t.Helper()
	var out []recoverable.ResumeRecoverable
	for _, b := range golden(t, "resume_v1_*.bin") {
		r, err := coder.DecodeResume(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func commits(t *testing.T) []recoverable.CommitRecoverable {
	t.Helper()
	var out []recoverable.CommitRecoverable
	for _, b := range golden(t, "commit_v1_*.bin") {
		c, err := coder.DecodeCommit(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func golden(t *testing.T, pattern string) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 {
		t.Fatalf("%s: found %d golden files in coder/testdata, want at least 2", pattern, len(names))
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// largestResume has every field at the bound package coder allows.
func largestResume() recoverable.ResumeRecoverable {
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	return recoverable.ResumeRecoverable{
		Bucket:        strings.Repeat("b", coder.MaxBucketLen),
		Key:           strings.Repeat("k", coder.MaxKeyLen),
		UploadID:      strings.Repeat("u", coder.MaxUploadIDLen),
		PartSize:      recoverable.MaxPartSize,
		StagingPrefix: strings.Repeat("p", coder.MaxKeyLen),
		Seq:           ^uint64(0),
		Parts: recoverable.PartList{
			Count:  recoverable.MaxS3Parts,
			Bytes:  recoverable.MaxS3Parts * recoverable.MaxPartSize,
			Digest: ones,
			CRC:    ^uint64(0),
		},
		Tail: recoverable.Tail{
			Len:    coder.MaxInlineTail,
			CRC:    ^uint64(0),
			Inline: []byte(strings.Repeat("t", coder.MaxInlineTail)),
		},
	}
}
