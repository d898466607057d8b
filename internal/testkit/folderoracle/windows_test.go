package folderoracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/crc64nvme"
)

// TestStreamPartitions: records land in their fixed window, late ones
// within the allowed lateness too, and records added once the watermark
// passed their window's expiry are dropped.
func TestStreamPartitions(t *testing.T) {
	base := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	add := func(d time.Duration, recs ...string) StreamEvent { return StreamEvent{At: at(d), Records: recs} }
	wm := func(d time.Duration) StreamEvent { return StreamEvent{At: at(d), Watermark: true} }
	s := Stream{
		Size: time.Hour, Lateness: 10 * time.Minute,
		Destination: func(r string) string { return "letter=" + r[:1] },
		Events: []StreamEvent{
			add(time.Minute, "a1", "b1"), wm(2 * time.Minute),
			add(59*time.Minute, "a2"),
			wm(time.Hour + time.Minute), // on time
			add(30*time.Minute, "a3"),   // late, within the lateness
			add(time.Hour+5*time.Minute, "a4"),
			wm(time.Hour + 11*time.Minute), // the first window expired
			add(40*time.Minute, "a5"),      // dropped
			add(time.Hour+20*time.Minute, "b2"),
		},
	}
	kept, dropped := s.Partitions()
	w0 := WindowName(base, at(time.Hour))
	w1 := WindowName(at(time.Hour), at(2*time.Hour))
	want := map[string][]string{
		"letter=a@" + w0: {"a1", "a2", "a3"},
		"letter=b@" + w0: {"b1"},
		"letter=a@" + w1: {"a4"},
		"letter=b@" + w1: {"b2"},
	}
	if len(kept) != len(want) {
		t.Fatalf("partitions %v; want %v", kept, want)
	}
	for id, recs := range want {
		if !slices.Equal(kept[id], recs) {
			t.Errorf("%s holds %v; want %v", id, kept[id], recs)
		}
	}
	if !slices.Equal(dropped, []string{"a5"}) {
		t.Errorf("dropped %v; want [a5]", dropped)
	}
	if w0 != "20240601T000000Z-20240601T010000Z" {
		t.Errorf("window name %q", w0)
	}
}

// windowFolder: one window, two partitions with their manifests, and the
// window's completion marker listing both files.
func windowFolder(t *testing.T) (*Snapshot, Expect) {
	w := "20240601T000000Z-20240601T010000Z"
	fa, fb := []byte("a1\na2\n"), []byte("b1\n")
	ka := "letter=a/" + w + "-pane-0-shard-00000-of-00001-file-00000.txt"
	kb := "letter=b/" + w + "-pane-1-shard-00000-of-00001-file-00000.txt"
	s := &Snapshot{Objects: map[string]Object{ka: obj(fa), kb: obj(fb)}}
	var marker bytes.Buffer
	for _, f := range []struct {
		key  string
		body []byte
		recs int64
	}{{ka, fa, 2}, {kb, fb, 1}} {
		e, _ := json.Marshal(Entry{Key: "out/" + f.key, Size: int64(len(f.body)), CRC64NVME: crc(f.body), Records: f.recs})
		d, _, _ := strings.Cut(f.key, "/")
		s.Objects[d+"/_s3once_manifest-"+w] = obj(append(e, '\n'))
		l, _ := json.Marshal(markerLine{Key: "out/" + f.key, Bytes: int64(len(f.body)), Records: f.recs, CRC64NVME: crc64nvme.Checksum(f.body)})
		marker.Write(append(l, '\n'))
	}
	s.Objects["_SUCCESS-"+w] = obj(marker.Bytes())
	return s, Expect{
		Partitions: map[string][]Candidate{
			"letter=a@" + w: {{Run: "run1", Ext: ".txt", Records: []string{"a2", "a1"}}},
			"letter=b@" + w: {{Run: "run1", Ext: ".txt", Records: []string{"b1"}}},
		},
		Manifests: true,
		Markers:   "manifest",
	}
}

func crc(b []byte) string { return fmt.Sprintf("%016x", crc64nvme.Checksum(b)) }

// TestJudgeWindows: a right window is right; its partitions are judged
// against their own window's candidates; a missing, early, stale or empty
// completion marker is found.
func TestJudgeWindows(t *testing.T) {
	s, e := windowFolder(t)
	if v := Judge(s, e); !v.Right() {
		t.Fatalf("the right folder: %s", v)
	}
	w := "20240601T000000Z-20240601T010000Z"
	for _, tc := range []struct {
		name       string
		edit       func(*Snapshot, *Expect)
		incomplete bool
		says       string
	}{
		{"marker missing", func(s *Snapshot, _ *Expect) { delete(s.Objects, "_SUCCESS-"+w) }, true, "marker _SUCCESS-" + w + " is missing"},
		{"marker before a manifest", func(s *Snapshot, _ *Expect) { delete(s.Objects, "letter=b/_s3once_manifest-"+w) }, false, "while a partition"},
		{"marker leaves a file out", func(s *Snapshot, _ *Expect) {
			m := s.Objects["_SUCCESS-"+w].Body
			s.Objects["_SUCCESS-"+w] = obj(m[:bytes.IndexByte(m, '\n')+1])
		}, false, "does not list"},
		{"marker of a success-only folder", func(_ *Snapshot, e *Expect) { e.Markers = "success" }, false, "want it empty"},
		{"marker where none is configured", func(_ *Snapshot, e *Expect) { e.Markers = "none" }, false, "for no window"},
		{"records of another window", func(_ *Snapshot, e *Expect) {
			e.Partitions["letter=b@"+w] = []Candidate{{Run: "run1", Ext: ".txt", Records: []string{"b2"}}}
		}, false, "no run wrote exactly these"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, e := windowFolder(t)
			tc.edit(s, &e)
			v := Judge(s, e)
			if v.Right() || v.Wrong() == tc.incomplete {
				t.Fatalf("wrong=%v, want %v: %s", v.Wrong(), !tc.incomplete, v)
			}
			if !strings.Contains(v.String(), tc.says) {
				t.Errorf("the verdict does not say %q: %s", tc.says, v)
			}
			// Only a missing marker is a state no reader can see.
			if unseen := v.RightBut(false); unseen != (tc.name == "marker missing") {
				t.Errorf("unseen=%v: %s", unseen, v)
			}
		})
	}
}
