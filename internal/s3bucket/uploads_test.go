package s3bucket_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/s3bucket"
)

// TestListUploads: ListUploads finds every open upload under a folder, two
// of one key included, through pages, and none of a sibling folder, of a
// key that only starts like the folder, or sorted before or after it.
func TestListUploads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	open := func(key string) string {
		out, err := e.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &e.bucket, Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.UploadId)
	}
	type u struct{ key, id string }
	var want []u
	for _, k := range []string{"out/a", "out/b/c", "out/z", "out/z"} {
		want = append(want, u{k, open(k)})
	}
	var all []u
	for _, k := range []string{"ou", "out", "out-v2/x", "p/x", "a"} {
		all = append(all, u{k, open(k)})
	}
	all = append(all, want...)
	c := newClient(t, e.client, s3bucket.Options{})
	list := func(prefix string) []u {
		t.Helper()
		var got []u
		err := c.ListUploads(ctx, e.bucket, prefix, func(page []s3bucket.Upload) error {
			if len(page) == 0 {
				t.Error("an empty page was handed on")
			}
			for _, p := range page {
				if p.Initiated.IsZero() {
					t.Errorf("upload %s of %s has no initiation time", p.UploadID, p.Key)
				}
				got = append(got, u{p.Key, p.UploadID})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	byKeyThenID := func(a, b u) int { return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.id, b.id)) }
	got := list("out/")
	for i := 1; i < len(got); i++ {
		if got[i-1].key > got[i].key {
			t.Fatalf("uploads out of key order: %v", got)
		}
	}
	slices.SortFunc(got, byKeyThenID)
	slices.SortFunc(want, byKeyThenID)
	if !slices.Equal(got, want) {
		t.Fatalf("ListUploads(out/) = %v, want %v", got, want)
	}
	got = list("")
	slices.SortFunc(got, byKeyThenID)
	slices.SortFunc(all, byKeyThenID)
	if !slices.Equal(got, all) {
		t.Fatalf("ListUploads(\"\") = %v, want %v", got, all)
	}
	if got := list("none/"); len(got) != 0 {
		t.Fatalf("ListUploads(none/) = %v", got)
	}

	stop := errors.New("stop")
	if err := c.ListUploads(ctx, e.bucket, "out/", func([]s3bucket.Upload) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error came back as %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.ListUploads(cancelled, e.bucket, "out/", func([]s3bucket.Upload) error { return nil }); err == nil {
		t.Fatal("a cancelled listing succeeded")
	}
}
