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
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3test"
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
	cm := s3bucket.New(c, s3bucket.Options{})
	ctx := context.Background()
	key := ownkeys.MarkerKey("out", "global", 0)
	if err := writeMarker(ctx, cm, bucket, key, []byte("a\n")); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(ctx, cm, bucket, key, []byte("a\n")); err != nil {
		t.Fatalf("same bytes again: %v", err)
	}
	if err := writeMarker(ctx, cm, bucket, key, []byte("b\n")); !errors.Is(err, committer.ErrKeyTaken) {
		t.Fatalf("other bytes: %v, want ErrKeyTaken", err)
	}
	if got := s3test.Object(t, c, bucket, key); string(got) != "a\n" {
		t.Errorf("the marker now holds %q", got)
	}
}

// Fixed windows: one manifest per window, named after it, listing exactly
// that window's files.
func TestCompletionMarkerPerWindow(t *testing.T) {
	bucket := srv.Bucket(t)
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	var in []event
	for i := 0; i < 600; i++ {
		in = append(in, event{At: base + int64(i)*300, Name: fmt.Sprintf("e%05d", i)}) // 3 minutes
	}
	p, s := beam.NewPipelineWithRoot()
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), beam.ParDo(s, stampEvent, beam.CreateList(s, in)))
	cfg := testConfig(bucket, "w")
	cfg.Format = "jsonl"
	cfg.Shards = 2
	cfg.CompletionMarker = MarkerManifest
	Write(s, windowed, cfg)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
	objs := s3test.Objects(t, testClient(), bucket, "w/")
	for m := 0; m < 3; m++ {
		win := fmt.Sprintf("20240601T10%02d00Z-20240601T10%02d00Z", m, m+1)
		marker, ok := objs[ownkeys.MarkerKey("w", win, 0)]
		if !ok {
			t.Fatalf("no marker for window %s among %v", win, keysOf(objs))
		}
		var want []string
		for k := range objs {
			if ownkeys.IsFileName("w", k) && strings.HasPrefix(k, "w/"+win+"-") {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		var listed []string
		for _, line := range strings.Split(strings.TrimSpace(string(marker)), "\n") {
			var r FileResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", win, err)
			}
			listed = append(listed, r.Key)
		}
		if len(want) == 0 || strings.Join(listed, ",") != strings.Join(want, ",") {
			t.Errorf("window %s: marker lists %v, files %v", win, listed, want)
		}
	}
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
