package s3mem_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/internal/testkit/s3mem"
)

// TestSeedAndListPages: seeded objects are listed in order across pages,
// under a prefix and after a start key, and the listing follows later
// puts and deletes.
func TestSeedAndListPages(t *testing.T) {
	fake := s3mem.New(s3mem.Options{PageSize: 7})
	objects := map[string][]byte{}
	var want []string
	for i := range 50 {
		k := fmt.Sprintf("p/%03d", i)
		objects[k] = []byte(k)
		want = append(want, k)
	}
	objects["a-before"] = []byte("x")
	objects["q-after"] = []byte("x")
	fake.Seed("b", objects)
	c := fake.NewClient(s3mem.ClientOptions{})
	ctx := context.Background()
	list := func(startAfter string) []string {
		t.Helper()
		in := &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("p/")}
		if startAfter != "" {
			in.StartAfter = aws.String(startAfter)
		}
		var keys []string
		pages := s3.NewListObjectsV2Paginator(c, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				keys = append(keys, *o.Key)
				if *o.Size != int64(len(*o.Key)) {
					t.Errorf("%s: size %d, want %d", *o.Key, *o.Size, len(*o.Key))
				}
			}
		}
		return keys
	}
	if got := list(""); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if got := list("p/041"); !slices.Equal(got, want[42:]) {
		t.Errorf("listed after p/041: %v, want %v", got, want[42:])
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("p/010")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("p/010a"), Body: strings.NewReader("p/010a")}); err != nil {
		t.Fatal(err)
	}
	want[10] = "p/010a"
	if got := list(""); !slices.Equal(got, want) {
		t.Errorf("after a delete and a put, listed %v, want %v", got, want)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("p/003"), ChecksumMode: "ENABLED"})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if out.ChecksumCRC64NVME == nil {
		t.Error("a seeded object has no CRC64NVME")
	}
}
