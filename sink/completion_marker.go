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
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
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
	_, err = beam.TryParDo(s, &markerFn{S: st.folder, Mode: mode}, grouped)
	if err != nil {
		return fmt.Errorf("s3once sink: %w", err)
	}
	return nil
}

// markerKey keys a file's result by its window's name.
func markerKey(r FileResult) (string, FileResult) { return r.Window, r }

// markerFn writes one window's marker.
type markerFn struct {
	S    folder `json:"s"`
	Mode string `json:"mode"`

	c *s3bucket.Client
}

func (f *markerFn) Setup(ctx context.Context) error {
	return f.S.setUp(ctx, func(_ *committer.Committer, c *s3bucket.Client, _ s3API) error {
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
func writeMarker(ctx context.Context, c *s3bucket.Client, bucket, key string, body []byte) error {
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

// ErrWindowComplete is wrapped by the error of a run that would add a file
// to a window whose completion marker exists and does not name the file.
// Its message carries the stable code errcode.WindowComplete.
var ErrWindowComplete = errcode.New(errcode.WindowComplete, "a window's completion marker does not name a file this run would add")

// WindowCompleteError is a run refused because it would add files to a
// window whose completion marker exists: the marker says the window is
// complete, and readers that waited for it would never see them. It wraps
// ErrWindowComplete.
type WindowCompleteError struct {
	Bucket, Prefix string
	// Window is the window's name, as in FileResult.Window.
	Window string
	// Marker is the key of the window's completion marker; Listed the
	// number of files it lists, or -1 where it is empty
	// (CompletionMarker "success") and so names no file.
	Marker string
	Listed int
	// Keys are some of the files (at most shownKeys) this run would add
	// to the window, of Count in all.
	Keys  []string
	Count int
	// Done says what the run did about it.
	Done string
}

func (e *WindowCompleteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s3once sink: the window %s of s3://%s/%s is complete: its completion marker s3://%s/%s exists", e.Window, e.Bucket, ownkeys.Folder(e.Prefix), e.Bucket, e.Marker)
	if e.Listed < 0 {
		fmt.Fprintf(&b, " (empty), and this run would add %d file(s) that the window did not hold when the marker was written (their keys hold no object): ", e.Count)
	} else {
		fmt.Fprintf(&b, " and lists %d file(s), and this run would add %d file(s) that it does not list with these bytes: ", e.Listed, e.Count)
	}
	writeKeys(&b, e.Bucket, e.Keys, e.Count)
	b.WriteString("; readers that waited for the marker would miss them: the run's input or settings differ from the run that completed the window; ")
	if e.Done != "" {
		b.WriteString(e.Done + "; ")
	}
	b.WriteString("to write the window again, delete its completion marker and the partitions this run changes (files and manifests), or write to a fresh Prefix: ")
	b.WriteString(ErrWindowComplete.Error())
	return b.String()
}

func (e *WindowCompleteError) Unwrap() error { return ErrWindowComplete }

// A completion marker closes its window: once it exists, no file it does
// not name is committed into the window (docs/guarantees.md). A listing
// marker (MarkerManifest) names its files; an empty one (MarkerSuccess)
// names the files committed when it was written, so a file is in the
// window when its key already holds an object (a rerun of identical
// files). The check reads the marker the sink writes for a window,
// ownkeys.MarkerKey(prefix, window, 0), whatever the run's own
// CompletionMarker: the setting is not recorded in the folder.

// markerStore is what the check reads the folder with.
type markerStore interface {
	ReadObject(ctx context.Context, bucket, key string, max int64) ([]byte, bool, error)
	Lookup(ctx context.Context, bucket, key string, size int64) (s3bucket.Holding, error)
}

var _ markerStore = (*s3bucket.Client)(nil)

// windowMarker is what a window's completion marker says.
type windowMarker struct {
	key   string
	found bool
	// listed holds a listing marker's files by key; nil for an empty
	// marker.
	listed map[string]FileResult
}

// names tells whether the marker names the file key with size and crc:
// a listing marker lists it with them (output version 1's markers carry
// no CRC64NVME: by size there); an empty one names it where its key holds
// an object, which exists tells (asked only of an empty marker).
func (m *windowMarker) names(key string, size int64, crc uint64, exists func() (bool, error)) (bool, error) {
	if m.listed == nil {
		return exists()
	}
	r, ok := m.listed[key]
	return ok && r.Bytes == size && (r.CRC64NVME == crc || r.CRC64NVME == 0), nil
}

// refusal is the error for files of m's window that the marker does not
// name.
func (m *windowMarker) refusal(bucket, prefix, window, done string) *WindowCompleteError {
	e := &WindowCompleteError{Bucket: bucket, Prefix: prefix, Window: window, Marker: m.key, Listed: len(m.listed), Done: done}
	if m.listed == nil {
		e.Listed = -1
	}
	return e
}

// markerGuard reads each window's completion marker once and keeps what
// it found, found or not: a marker is written once and never changes, and
// the run writes a window's own marker only after every file of the
// window went through the commit stage.
type markerGuard struct {
	mu      sync.Mutex
	windows map[string]*windowMarker // by window name
}

// marker returns what window's completion marker says, reading it the
// first time.
func (g *markerGuard) marker(ctx context.Context, c markerStore, bucket, prefix, window string) (*windowMarker, error) {
	g.mu.Lock()
	m, ok := g.windows[window]
	g.mu.Unlock()
	if ok {
		return m, nil
	}
	key := ownkeys.MarkerKey(prefix, window, 0)
	body, found, err := c.ReadObject(ctx, bucket, key, maxMarkerBytes)
	if err != nil {
		return nil, fmt.Errorf("read the completion marker s3://%s/%s: %w", bucket, key, err)
	}
	m = &windowMarker{key: key, found: found}
	if found && len(body) > 0 {
		m.listed = map[string]FileResult{}
		for i, line := range bytes.Split(bytes.TrimSuffix(body, []byte{'\n'}), []byte{'\n'}) {
			var r FileResult
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("the completion marker s3://%s/%s does not decode (line %d: %w): it was edited outside s3once, so what its window holds cannot be judged; restore it, or delete it and the window's partitions and run again", bucket, key, i+1, err)
			}
			m.listed[r.Key] = r
		}
	}
	g.mu.Lock()
	if g.windows == nil {
		g.windows = map[string]*windowMarker{}
	}
	g.windows[window] = m
	g.mu.Unlock()
	return m, nil
}

// check refuses the file r, of size and crc, where its window's completion
// marker exists and does not name it: a listing marker that does not list
// it with these bytes, or an empty marker while its key holds no object
// (a key holding other bytes is the commit's ErrKeyTaken).
func (g *markerGuard) check(ctx context.Context, c markerStore, prefix string, r FileResult, size int64, crc uint64, done string) error {
	m, err := g.marker(ctx, c, r.Bucket, prefix, r.Window)
	if err != nil || !m.found {
		return err
	}
	named, err := m.names(r.Key, size, crc, func() (bool, error) {
		holds, err := c.Lookup(ctx, r.Bucket, r.Key, size)
		return holds.Exists, err
	})
	if err != nil || named {
		return err
	}
	e := m.refusal(r.Bucket, prefix, r.Window, done)
	e.Keys, e.Count = []string{r.Key}, 1
	return e
}
