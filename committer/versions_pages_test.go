package committer

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// pagedVersions answers ListObjectVersions with scripted pages and logs
// every listing and deletion in order; it makes no other call.
type pagedVersions struct {
	S3
	pages []*s3.ListObjectVersionsOutput
	log   []string
}

func (p *pagedVersions) ListObjectVersions(_ context.Context, in *s3.ListObjectVersionsInput, _ ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	p.log = append(p.log, "list after "+aws.ToString(in.KeyMarker))
	if len(p.pages) == 0 {
		return &s3.ListObjectVersionsOutput{}, nil
	}
	out := p.pages[0]
	p.pages = p.pages[1:]
	return out, nil
}

func (p *pagedVersions) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	for _, o := range in.Delete.Objects {
		p.log = append(p.log, "delete "+aws.ToString(o.Key))
	}
	return &s3.DeleteObjectsOutput{}, nil
}

func oldVersion(key string) types.ObjectVersion {
	return types.ObjectVersion{Key: aws.String(key), VersionId: aws.String("v-" + key), IsLatest: aws.Bool(false), Size: aws.Int64(1)}
}

// TestPurgeVersionsPageByPage checks that each page's versions are deleted
// before the next page is read, and that a truncated page without a marker
// stops the purge with an error instead of listing from the start again.
func TestPurgeVersionsPageByPage(t *testing.T) {
	all := func(string) bool { return true }
	fake := &pagedVersions{pages: []*s3.ListObjectVersionsOutput{
		{Versions: []types.ObjectVersion{oldVersion("a")}, IsTruncated: aws.Bool(true), NextKeyMarker: aws.String("a"), NextVersionIdMarker: aws.String("v-a")},
		{Versions: []types.ObjectVersion{oldVersion("b")}, IsTruncated: aws.Bool(false)},
	}}
	c, err := New(fake, Options{Versioned: true, MaxAttempts: 1, MaxRounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.purgeVersions(context.Background(), "bucket", "staging/", all, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"list after ", "delete a", "list after a", "delete b"}; !slices.Equal(fake.log, want) {
		t.Fatalf("calls %q, want %q", fake.log, want)
	}
	if n.stale != 2 || n.removed != 2 {
		t.Fatalf("counted %+v, want 2 stale and 2 removed", n)
	}

	fake = &pagedVersions{pages: []*s3.ListObjectVersionsOutput{
		{Versions: []types.ObjectVersion{oldVersion("a")}, IsTruncated: aws.Bool(true)},
		{Versions: []types.ObjectVersion{oldVersion("a")}, IsTruncated: aws.Bool(false)},
	}}
	if c, err = New(fake, Options{Versioned: true, MaxAttempts: 1, MaxRounds: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = c.purgeVersions(context.Background(), "bucket", "staging/", all, false, nil)
	if err == nil || !strings.Contains(err.Error(), "no marker to go on from") {
		t.Fatalf("a truncated page without a marker: %v, want the purge to stop", err)
	}
	if want := []string{"list after ", "delete a"}; !slices.Equal(fake.log, want) {
		t.Fatalf("calls %q, want %q (no listing from the start again)", fake.log, want)
	}
}
