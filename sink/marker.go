package sink

// Completion markers: an object per window (and per run, for bounded input
// in the global window) written once every file of it is committed, for
// readers that wait for one (Spark's and Hive's "_SUCCESS").

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/recoverable"
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

// withMarkers adds the marker stage after the commit stage when the
// settings ask for one: the committed files' results, grouped by window,
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

	client s3API
}

func (f *markerFn) Setup(ctx context.Context) error {
	w, err := f.S.worker(ctx)
	if err != nil {
		return err
	}
	f.client = w.client
	return nil
}

func (f *markerFn) ProcessElement(ctx context.Context, pane typex.PaneInfo, window string, results func(*FileResult) bool) error {
	key := ownkeys.MarkerKey(f.S.Prefix, window, pane.Index)
	return writeMarker(ctx, f.client, f.S.Bucket, key, markerBody(f.Mode, results))
}

// markerBody is the marker's bytes: nothing for MarkerSuccess; for
// MarkerManifest, the window's results, each once (Beam may deliver a result
// twice), sorted by key, as JSON lines. The same files give the same bytes.
func markerBody(mode string, results func(*FileResult) bool) []byte {
	byKey := map[string]FileResult{}
	var r FileResult
	for results(&r) {
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
func writeMarker(ctx context.Context, c s3API, bucket, key string, body []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*"),
		ContentType: aws.String("application/x-ndjson"),
	})
	if err == nil {
		return nil
	}
	if st := recoverable.StatusCode(err); st != http.StatusPreconditionFailed && st != http.StatusConflict {
		return fmt.Errorf("s3once sink: write the completion marker s3://%s/%s: %w", bucket, key, err)
	}
	out, gerr := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if gerr != nil {
		return fmt.Errorf("s3once sink: the completion marker s3://%s/%s exists (%w) and cannot be read: %w", bucket, key, err, gerr)
	}
	defer out.Body.Close()
	have, rerr := io.ReadAll(out.Body)
	if rerr != nil {
		return fmt.Errorf("s3once sink: read the completion marker s3://%s/%s: %w", bucket, key, rerr)
	}
	if !bytes.Equal(have, body) {
		return fmt.Errorf("s3once sink: the completion marker s3://%s/%s holds other bytes (%d, not %d): %w; the window's files differ from an earlier run's: inspect both runs, and delete the marker if this run's files are the right ones",
			bucket, key, len(have), len(body), committer.ErrKeyTaken)
	}
	return nil
}
