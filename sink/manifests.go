package sink

// Partition manifests (output version 2): once every file of a window is
// committed, one object per partition (destination) lists the partition's
// files, <Prefix>/<destination>/_s3once_manifest-<window>
// (internal/manifest has its encoding), and then the window's completion
// marker, if the Config asks for one, is written from the same results.
//
// When a window is complete:
//
//   - Under the run-wide barrier (bounded input), the results are all in
//     the global window: a GroupByKey on the window's name fires once the
//     whole run is committed.
//   - Elsewhere (unbounded input, FinalizeCommit "always", or Beam hiding
//     whether the input is bounded), each result is keyed by its window's
//     name, with the time its window expires (its end plus the input's
//     allowed lateness), and moved into the global window, where a stateful
//     DoFn gathers a window's results and writes them when an event-time
//     timer fires just after that time. Every pane of the window, late
//     ones within the lateness included, has gone through the commit stage
//     by then: the watermark of a stage never passes an element still in
//     flight before it, and such an element's timestamp lies within its
//     window. The timer is set 1 ms after the expiry because a runner may
//     fire a timer once the watermark reaches it (prism does), while an
//     element of the window's last pane, stamped with the window's last
//     instant, may still hold the watermark there. The state lives in the
//     global window, so no runner collects it before the timer fires. Data
//     later than the expiry is dropped by Beam before it reaches the sink.
//     The user's trigger plays no part: one manifest per partition and one
//     marker per window, however many panes fired. The global window never
//     expires: its results (bounded input with FinalizeCommit "always", or
//     where Beam hides the boundedness) go to a GroupByKey in the global
//     window instead, which fires once the input has ended.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"golang.org/x/sync/errgroup"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
)

func init() {
	register.Function1x2(windowKey)
	register.Function4x0(splitExpiry)
	register.Emitter2[string, expiring]()
	register.Emitter2[string, FileResult]()
	register.DoFn4x1[context.Context, string, func(*FileResult) bool, func(WindowFiles), error](&windowDoneFn{})
	register.DoFn2x2[beam.Window, FileResult, string, expiring](&expiryKeyFn{})
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, string, expiring, func(WindowFiles), error](&windowExpiryFn{})
	beam.RegisterType(reflect.TypeFor[expiring]())
	beam.RegisterType(reflect.TypeFor[WindowFiles]())
	register.Emitter1[WindowFiles]()
}

// metricManifests counts the partition manifests written (or found in
// place with the same bytes).
var metricManifests = beam.NewCounter("s3once", "manifests_written")

// windowKey keys a file's result by its window's name.
func windowKey(r FileResult) (string, FileResult) { return r.Window, r }

// WindowFiles is a window's files, complete: every file of the window is
// committed and its partition manifests are written (WriteWindows).
type WindowFiles struct {
	// Window is the window's name, as in FileResult.Window.
	Window string `json:"window"`
	// Files are the window's files, each once, in key order.
	Files []FileResult `json:"files"`
}

// withManifests adds the manifest stage after the commit stage, and
// returns its PCollection<WindowFiles>. barrier says whether the results
// come from the run-wide barrier (all in the global window); lateness is
// the input's allowed lateness.
func withManifests(s beam.Scope, files beam.PCollection, st settings, barrier bool, lateness time.Duration) (beam.PCollection, error) {
	none := beam.PCollection{}
	s = s.Scope("Manifests")
	w := windowWriter{S: st.folder, Mode: st.Requests.CompletionMarker, Strays: !barrier}
	if barrier {
		keyed, err := single(beam.TryParDo(s, windowKey, files))
		if err != nil {
			return none, err
		}
		grouped, err := beam.TryGroupByKey(s, keyed)
		if err != nil {
			return none, fmt.Errorf("s3once sink: %w", err)
		}
		return single(beam.TryParDo(s, &windowDoneFn{windowWriter: w}, grouped))
	}
	expiringKeyed, err := single(beam.TryParDo(s, &expiryKeyFn{LatenessMillis: lateness.Milliseconds()}, files))
	if err != nil {
		return none, err
	}
	global, err := beam.TryWindowInto(s, window.NewGlobalWindows(), expiringKeyed)
	if err != nil {
		return none, fmt.Errorf("s3once sink: %w", err)
	}
	expires, endless, err := splitByExpiry(s, global)
	if err != nil {
		return none, err
	}
	expired, err := single(beam.TryParDo(s, &windowExpiryFn{
		windowWriter: w,
		Results:      state.MakeBagState[expiring]("results"),
		Expiry:       timers.InEventTime("expiry"),
	}, expires))
	if err != nil {
		return none, err
	}
	// The global window never expires: its results are complete when the
	// input is, which a GroupByKey in the global window (with the default
	// trigger WindowInto gave them) waits for. Bounded input thus gets its
	// manifests at its end; unbounded input in the global window never
	// completes a partition.
	grouped, err := beam.TryGroupByKey(s, endless)
	if err != nil {
		return none, fmt.Errorf("s3once sink: %w", err)
	}
	ended, err := single(beam.TryParDo(s, &windowDoneFn{windowWriter: w}, grouped))
	if err != nil {
		return none, err
	}
	windows, err := beam.TryFlatten(s, expired, ended)
	if err != nil {
		return none, fmt.Errorf("s3once sink: %w", err)
	}
	return windows, nil
}

// splitByExpiry parts the keyed results into those of windows that expire
// and those of the global window, which does not.
func splitByExpiry(s beam.Scope, keyed beam.PCollection) (expires, endless beam.PCollection, err error) {
	outs, err := beam.TryParDo(s, splitExpiry, keyed)
	if err != nil {
		return expires, endless, fmt.Errorf("s3once sink: %w", err)
	}
	if len(outs) != 2 {
		return expires, endless, fmt.Errorf("s3once sink: the expiry split has %d outputs", len(outs))
	}
	return outs[0], outs[1], nil
}

// splitExpiry sends a result whose window expires to expires, and one of
// the global window to endless.
func splitExpiry(window string, e expiring, expires func(string, expiring), endless func(string, FileResult)) {
	if e.Expiry >= int64(mtime.EndOfGlobalWindowTime) {
		endless(window, e.Result)
		return
	}
	expires(window, e)
}

// windowWriter writes a complete window's manifests and marker.
type windowWriter struct {
	S    folder `json:"s"`
	Mode string `json:"mode,omitempty"`
	// Strays, where there is no barrier, lists each partition before its
	// manifest is written, for s3once files the run did not commit there
	// (strays).
	Strays bool `json:"strays,omitempty"`

	c *committer.Committer
	b *s3bucket.Client
}

func (w *windowWriter) Setup(ctx context.Context) error {
	return w.S.setUp(ctx, func(c *committer.Committer, b *s3bucket.Client, _ s3API) error {
		w.c, w.b = c, b
		return nil
	})
}

// windowDoneFn writes the manifests of a window whose results a
// GroupByKey gathered (under the run-wide barrier, and for the global
// window), and then emits the window's files.
type windowDoneFn struct {
	windowWriter
}

func (f *windowDoneFn) ProcessElement(ctx context.Context, window string, results func(*FileResult) bool, emit func(WindowFiles)) error {
	var all []FileResult
	var r FileResult
	for results(&r) {
		all = append(all, r)
		r = FileResult{}
	}
	files, err := f.finish(ctx, window, all)
	if err != nil {
		return err
	}
	emit(WindowFiles{Window: window, Files: files})
	return nil
}

// expiring is a file's result on its way to the manifests' stage in the
// global window, with the time (in milliseconds) after which its window
// can receive no more files.
type expiring struct {
	Result FileResult
	Expiry int64
}

// expiryKeyFn keys each result by its window's name and stamps it with the
// window's expiry: its last instant plus the allowed lateness.
type expiryKeyFn struct {
	LatenessMillis int64 `json:"latenessMillis,omitempty"`
}

func (f *expiryKeyFn) ProcessElement(w beam.Window, r FileResult) (string, expiring) {
	at := w.MaxTimestamp()
	if at < mtime.EndOfGlobalWindowTime {
		at = min(at+mtime.Time(f.LatenessMillis), mtime.EndOfGlobalWindowTime)
	}
	return r.Window, expiring{Result: r, Expiry: int64(at)}
}

// windowExpiryFn gathers a window's results, in the global window, and
// writes its manifests 1 ms after the window expires (see the file's
// comment).
type windowExpiryFn struct {
	windowWriter

	Results state.Bag[expiring]
	Expiry  timers.EventTime
}

// ProcessElement keeps a result until its window expires. (It emits
// nothing; the emitter is OnTimer's, which Beam takes from here.)
func (f *windowExpiryFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, window string, e expiring, _ func(WindowFiles)) error {
	if err := f.Results.Add(sp, e); err != nil {
		return fmt.Errorf("s3once sink: manifests: keep the result of s3://%s/%s: %w", e.Result.Bucket, e.Result.Key, err)
	}
	// The window's files are emitted at its expiry, which holds the
	// output's watermark until then.
	f.Expiry.Set(tp, mtime.Time(e.Expiry+1).ToTime(), timers.WithOutputTimestamp(mtime.Time(e.Expiry).ToTime()))
	return nil
}

func (f *windowExpiryFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, window string, timer timers.Context, emit func(WindowFiles)) error {
	if timer.Family != f.Expiry.Family {
		return nil
	}
	kept, _, err := f.Results.Read(sp)
	if err != nil {
		return fmt.Errorf("s3once sink: manifests: read the results of window %s: %w", window, err)
	}
	all := make([]FileResult, len(kept))
	for i, e := range kept {
		all[i] = e.Result
	}
	files, err := f.finish(ctx, window, all)
	if err != nil {
		return err
	}
	if err := f.Results.Clear(sp); err != nil {
		return err
	}
	emit(WindowFiles{Window: window, Files: files})
	return nil
}

// finish writes the manifest of each partition of the window, removes the
// left-over uploads at the window's file keys (leftovers.go), then writes
// its completion marker. Each manifest and marker is written once
// (If-None-Match); an object in place with the same bytes (a retry, a
// rerun) is a success, one with other bytes fails the run: the partition
// is another run's. Where there is no barrier (Strays), a partition that
// holds an s3once file the run did not commit there gets no manifest, the
// window no marker, and the run fails with the partition's
// PartitionChangedError (the first by key), once the window's other
// manifests are written. It returns the window's files, each once, in key
// order.
func (w *windowWriter) finish(ctx context.Context, window string, results []FileResult) ([]FileResult, error) {
	byKey := map[string]FileResult{}
	for _, r := range results {
		byKey[r.Key] = r // a result may come twice; both are equal
	}
	byDest := map[string][]manifest.Entry{}
	for _, r := range byKey {
		byDest[r.Destination] = append(byDest[r.Destination], manifest.Entry{Key: r.Key, Size: r.Bytes, CRC64NVME: r.CRC64NVME, Records: r.Records})
	}
	var mu sync.Mutex
	var refused *PartitionChangedError
	written := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(barrierLooks)
	for dest, entries := range byDest {
		g.Go(func() error {
			if w.Strays {
				e, err := w.strays(gctx, dest, window, byKey)
				if err != nil || e != nil {
					mu.Lock()
					if e != nil && (refused == nil || firstKey(e) < firstKey(refused)) {
						refused = e
					}
					mu.Unlock()
					return err
				}
			}
			if err := w.writeManifest(gctx, dest, window, entries); err != nil {
				return err
			}
			mu.Lock()
			written++
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	metricManifests.Inc(ctx, int64(written))
	if err != nil {
		return nil, err
	}
	// Every file of the window is committed: uploads still open at their
	// keys are left-overs (leftovers.go), removed before the marker.
	w.abortLeftovers(ctx, window, byKey)
	if refused != nil {
		return nil, refused
	}
	sorted := make([]FileResult, 0, len(byKey))
	for _, r := range byKey {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b FileResult) int { return strings.Compare(a.Key, b.Key) })
	if w.Mode == "" || len(byKey) == 0 {
		return sorted, nil
	}
	var body []byte
	if w.Mode == MarkerManifest {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, r := range sorted {
			_ = enc.Encode(r) // a FileResult always encodes
		}
		body = b.Bytes()
	}
	return sorted, writeMarker(ctx, w.b, w.S.Bucket, ownkeys.MarkerKey(w.S.Prefix, window, 0), body)
}

// strayDone is what the manifest stage did about a partition holding
// files the run did not commit there.
const strayDone = "this run wrote no manifest for it and no completion marker for its window, so s3once verify does not pass it"

// strays lists the partition of dest in window and returns its refusal
// where it holds an s3once file, of any extension, that is not one of the
// window's files this run committed (mine, by key): an earlier run's file
// the run did not write again (a changed rerun into a window that expired
// without its manifest), which the manifest would leave out. It returns
// nil where every file is the run's. One listing call per 1,000 keys.
func (w *windowWriter) strays(ctx context.Context, dest, window string, mine map[string]FileResult) (*PartitionChangedError, error) {
	at := ownkeys.PartitionFilePrefix(w.S.Prefix, dest, window)
	e := &PartitionChangedError{Bucket: w.S.Bucket, Prefix: w.S.Prefix, Destination: dest, Window: window, Mixed: true, Done: strayDone}
	err := w.b.List(ctx, w.S.Bucket, at, func(page []s3bucket.Object) error {
		for _, o := range page {
			if _, ok := mine[o.Key]; !ok && ownkeys.IsPartitionFile(w.S.Prefix, dest, window, o.Key) {
				shownAdd(&e.Keys, &e.Count, o.Key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("s3once sink: manifests: list the partition %s: %w", at, err)
	}
	if e.Count == 0 {
		return nil, nil
	}
	return e, nil
}

func (w *windowWriter) writeManifest(ctx context.Context, dest, window string, entries []manifest.Entry) error {
	body, err := manifest.Encode(entries)
	if err != nil {
		return fmt.Errorf("s3once sink: the manifest of partition %s: %w", ownkeys.PartitionFilePrefix(w.S.Prefix, dest, window), err)
	}
	key := ownkeys.ManifestKey(w.S.Prefix, dest, window)
	have, written, err := w.b.PutOnce(ctx, w.S.Bucket, key, body, "application/x-ndjson", manifest.MaxBytes)
	if err != nil {
		return fmt.Errorf("s3once sink: write the partition manifest: %w", err)
	}
	if written || bytes.Equal(have, body) {
		return nil
	}
	return fmt.Errorf("s3once sink: the partition manifest s3://%s/%s lists other files (%d bytes, this run's would be %d): another run of other input or settings completed the partition while this one ran; any of this run's files it does not list make the partition mixed, and 's3once verify --bucket %s --prefix %s' names them. Delete the partition's files and its manifest to replace them, or %s: %w",
		w.S.Bucket, key, len(have), len(body), w.S.Bucket, w.S.Prefix, freshPrefix(w.S.Prefix), ErrPartitionChanged)
}
