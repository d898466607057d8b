package icebergtable

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window/trigger"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"

	"github.com/s3once/s3once/internal/manifest"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/sink"
)

// eventAt makes the record of an ID at the element's event time.
func eventAt(ts beam.EventTime, id int64) event {
	return event{ID: id, Name: fmt.Sprintf("event-%05d", id), At: ts.ToTime().UTC()}
}

func init() { register.Function2x1(eventAt) }

// TestAppendWindows: unbounded input in one-hour windows whose trigger
// fires early every 40 records and again for late data within the allowed
// lateness. Appended from sink.WriteWindows, each window becomes exactly one
// snapshot, at its expiry, holding every file of every pane of the window
// (the late one included) and nothing else: the same files as the window's
// partition manifests, which were written before it. Data beyond the
// lateness is dropped by Beam and is in no snapshot.
func TestAppendWindows(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	st := stageRun(t, "s3once-test", catalogProps(t, bucket), "stream-1")
	cfg, cat, bucketName, prefix := st.cfg, st.cat, st.bucket, st.prefix

	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	ts := teststream.NewConfig()
	watermark := int64(0)
	advance := func(ms int64) {
		if ms <= watermark {
			return
		}
		watermark = ms
		if err := ts.AdvanceWatermark(ms); err != nil {
			t.Fatal(err)
		}
	}
	next := int64(0)
	var kept [][2]int
	add := func(ms int64, n int, keep bool) {
		var ids []int64
		for range n {
			ids = append(ids, next)
			next++
		}
		if err := ts.AddElementList(ms, ids); err != nil {
			t.Fatal(err)
		}
		if keep {
			kept = append(kept, [2]int{int(ids[0]), n})
		}
	}
	for hour := range 2 {
		h := time.Duration(hour) * time.Hour
		for step := range 3 {
			add(at(h+time.Duration(step)*time.Minute), 40, true)
			advance(at(h + time.Duration(step)*time.Minute + time.Second))
		}
		// The window ends; late data within its 10 minutes of lateness.
		advance(at(h + time.Hour + time.Minute))
		add(at(h+30*time.Minute), 30, true)
		// The window expires; data later than that is dropped.
		advance(at(h + time.Hour + 20*time.Minute))
		add(at(h+40*time.Minute), 25, false)
	}
	if err := ts.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}

	token := fmt.Sprintf("%s/%d", t.Name(), time.Now().UnixNano())
	p, s := beam.NewPipelineWithRoot()
	recs := beam.ParDo(s, eventAt, teststream.Create(s, ts))
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Hour), recs,
		beam.Trigger(trigger.AfterEndOfWindow().
			EarlyFiring(trigger.Repeat(trigger.AfterCount(40))).
			LateFiring(trigger.Repeat(trigger.AfterCount(1)))),
		beam.AllowedLateness(10*time.Minute), beam.PanesDiscard())
	_, windows := sink.WriteWindows(s, windowed, parquetSink(bucketName, prefix, 2))
	beam.ParDo0(s, &resultsFn{Token: token}, Append(s, windows, cfg))
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}

	resultsMu.Lock()
	res := slices.Clone(appended[token])
	resultsMu.Unlock()
	if len(res) != 2 {
		t.Fatalf("%d commits: %+v; want one per window", len(res), res)
	}
	wantIDs(t, cat, kept...)

	loaded, err := cat.LoadTable(ctx, cfg.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	snaps := loaded.Metadata().Snapshots()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots; want one per window", len(snaps))
	}
	fs, err := loaded.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	windowsSeen := map[string]bool{}
	for _, snap := range snaps {
		win := snap.Summary.Properties[PropWindow]
		var added []string
		manifests, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					t.Fatal(err)
				}
				if e.SnapshotID() == snap.SnapshotID {
					added = append(added, e.DataFile().FilePath())
				}
			}
		}
		windowsSeen[win] = true
		body, err := os.ReadFile(localPath(t, "s3://"+bucketName+"/"+ownkeys.ManifestKey(prefix, "", win)))
		if err != nil {
			t.Fatalf("window %s: its partition manifest: %v", win, err)
		}
		entries, err := manifest.Decode(body)
		if err != nil {
			t.Fatalf("window %s: its partition manifest: %v", win, err)
		}
		var listed []string
		for _, e := range entries {
			listed = append(listed, "s3://"+bucketName+"/"+e.Key)
		}
		slices.Sort(added)
		slices.Sort(listed)
		if len(listed) < 3 || !slices.Equal(added, listed) {
			t.Errorf("window %s: snapshot %d added %v; the window's manifest lists %v", win, snap.SnapshotID, added, listed)
		}
	}
	want := map[string]bool{"20240601T000000Z-20240601T010000Z": true, "20240601T010000Z-20240601T020000Z": true}
	if !maps.Equal(windowsSeen, want) {
		t.Errorf("snapshots of windows %v; want %v", windowsSeen, want)
	}
}
