package sink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3test"
)

// A bounded run with CompletionMarker "manifest" writes one _SUCCESS at the
// prefix that lists every committed file once, sorted, with its size; a
// rerun finds the same marker and succeeds; "success" writes an empty one.
func TestCompletionMarkerManifest(t *testing.T) {
	bucket := srv.Bucket(t)
	in := make([]string, 300)
	for i := range in {
		in[i] = fmt.Sprintf("record %03d", i)
	}
	run := func(prefix, mode string) {
		t.Helper()
		p, s := beam.NewPipelineWithRoot()
		cfg := testConfig(bucket, prefix)
		cfg.Shards = 3
		cfg.MaxFileRecords = 40
		cfg.CompletionMarker = mode
		Write(s, beam.CreateList(s, in), cfg)
		if err := ptest.Run(p); err != nil {
			t.Fatal(err)
		}
	}
	run("m", MarkerManifest)
	c := testClient()
	objs := s3test.Objects(t, c, bucket, "m/")
	marker, ok := objs[ownkeys.MarkerKey("m", "global", 0)]
	if !ok {
		t.Fatalf("no marker among %d objects", len(objs))
	}
	var files []string
	for k := range objs {
		if ownkeys.IsFileName("m", k) {
			files = append(files, k)
		}
	}
	sort.Strings(files)
	var listed []string
	sc := bufio.NewScanner(bytes.NewReader(marker))
	for sc.Scan() {
		var r FileResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("manifest line %q: %v", sc.Text(), err)
		}
		if r.Bytes != int64(len(objs[r.Key])) {
			t.Errorf("manifest says %s has %d bytes, it has %d", r.Key, r.Bytes, len(objs[r.Key]))
		}
		listed = append(listed, r.Key)
	}
	if len(files) < 8 || strings.Join(listed, ",") != strings.Join(files, ",") {
		t.Fatalf("manifest lists %v\nthe prefix holds %v", listed, files)
	}

	run("m", MarkerManifest) // a rerun: same files, same marker
	if again := s3test.Object(t, c, bucket, ownkeys.MarkerKey("m", "global", 0)); !bytes.Equal(again, marker) {
		t.Errorf("the rerun changed the marker")
	}

	run("s", MarkerSuccess)
	if b := s3test.Object(t, c, bucket, "s/_SUCCESS"); len(b) != 0 {
		t.Errorf("success marker holds %d bytes, want none", len(b))
	}
	checkClean(t, c, bucket)
}

// A marker is written once: the same bytes again succeed, other bytes are
// ErrKeyTaken and leave the first.
func TestCompletionMarkerWrittenOnce(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	ctx := context.Background()
	key := ownkeys.MarkerKey("out", "global", 0)
	if err := writeMarker(ctx, c, bucket, key, []byte("a\n")); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(ctx, c, bucket, key, []byte("a\n")); err != nil {
		t.Fatalf("same bytes again: %v", err)
	}
	if err := writeMarker(ctx, c, bucket, key, []byte("b\n")); !errors.Is(err, committer.ErrKeyTaken) {
		t.Fatalf("other bytes: %v, want ErrKeyTaken", err)
	}
	if got := s3test.Object(t, c, bucket, key); string(got) != "a\n" {
		t.Errorf("the marker now holds %q", got)
	}
}
