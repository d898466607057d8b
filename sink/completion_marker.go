package sink

// Completion markers: an object per window (and per run, for bounded input
// in the global window) written once every file of it is committed, for
// readers that wait for one (Spark's and Hive's "_SUCCESS").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
)

// Values of Config.CompletionMarker.
const (
	// MarkerSuccess writes an empty _SUCCESS object per window.
	MarkerSuccess = "success"
	// MarkerManifest writes a _SUCCESS object per window that lists the
	// window's files: one JSON FileResult per line, sorted by key.
	MarkerManifest = "manifest"
)

func init() {
	register.Function1x2(markerKey)
	register.DoFn4x1[context.Context, typex.PaneInfo, string, func(*FileResult) bool, error](&markerFn{})
	register.Iter1[FileResult]()
}

func checkMarker(mode string) error {
	switch mode {
	case "", MarkerSuccess, MarkerManifest:
		return nil
	}
	return fmt.Errorf("CompletionMarker %q must be %q, %q or empty (none)", mode, MarkerSuccess, MarkerManifest)
}

// withMarkers adds output version 1's marker stage after the commit stage
// when the settings ask for one (version 2 writes markers after the
// partition manifests, manifests.go): the committed files' results, grouped by window,
// become one marker each. The grouping fires once the watermark passes the
// window, that is once every file of the window went through the commit
// stage.
func withMarkers(s beam.Scope, files beam.PCollection, st settings) error {
	mode := st.Requests.CompletionMarker
	if mode == "" {
		return nil
	}
	s = s.Scope("CompletionMarker")
	keyed, err := single(beam.TryParDo(s, markerKey, files))
	if err != nil {
		return err
	}
	grouped, err := beam.TryGroupByKey(s, keyed)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	_, err = beam.TryParDo(s, &markerFn{S: st.forCommit(), Mode: mode}, grouped)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	return nil
}

// markerKey keys a file's result by its window's name.
func markerKey(r FileResult) (string, FileResult) { return r.Window, r }

// markerFn writes one window's marker.
type markerFn struct {
	S    settings `json:"s"`
	Mode string   `json:"mode"`

	c *committer.Committer
}

func (f *markerFn) Setup(ctx context.Context) error {
	return f.S.setUp(ctx, func(c *committer.Committer, _ s3API) error {
		f.c = c
		return nil
	})
}

func (f *markerFn) ProcessElement(ctx context.Context, pane typex.PaneInfo, window string, results func(*FileResult) bool) error {
	key := ownkeys.MarkerKey(f.S.Prefix, window, pane.Index)
	return writeMarker(ctx, f.c, f.S.Bucket, key, markerBody(f.Mode, results))
}

// markerBody is the marker's bytes: nothing for MarkerSuccess; for
// MarkerManifest, the window's results, each once (Beam may deliver a result
// twice), sorted by key, as JSON lines. The same files give the same bytes.
func markerBody(mode string, results func(*FileResult) bool) []byte {
	byKey := map[string]FileResult{}
	var r FileResult
	for results(&r) {
		r.CRC64NVME = 0 // output version 1's markers were written without it
		byKey[r.Key] = r
	}
	if mode != MarkerManifest {
		return nil
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, k := range keys {
		_ = enc.Encode(byKey[k]) // a FileResult always encodes
	}
	return b.Bytes()
}

// writeMarker commits a marker as a file is committed: written only where
// the key is empty (If-None-Match: *). A key that already holds the same
// bytes (a retry, a rerun) is a success; other bytes are ErrKeyTaken.
func writeMarker(ctx context.Context, c *committer.Committer, bucket, key string, body []byte) error {
	have, written, err := c.PutOnce(ctx, bucket, key, body, "application/x-ndjson", maxMarkerBytes)
	if err != nil {
		return fmt.Errorf("s3once sink: write the completion marker: %w", err)
	}
	if written || bytes.Equal(have, body) {
		return nil
	}
	return fmt.Errorf("s3once sink: the completion marker s3://%s/%s holds other bytes (%d, not %d): %w; the window's files differ from an earlier run's: inspect both runs, and delete the marker if this run's files are the right ones",
		bucket, key, len(have), len(body), committer.ErrKeyTaken)
}

// maxMarkerBytes bounds what is read of a completion marker found in place.
const maxMarkerBytes = 1 << 30
