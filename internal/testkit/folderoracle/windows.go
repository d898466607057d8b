package folderoracle

// The windowed model: which records of an unbounded input end in which
// partition, from the input's events alone (elements at event times and
// watermark advances), fixed windows and the allowed lateness, as Beam
// documents them; and the completion markers of windows.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/minio/crc64nvme"
)

// StreamEvent is one event of an unbounded input, in order: records added
// at an event time, or the watermark advanced to a time.
type StreamEvent struct {
	// At is the records' event time, or the new watermark.
	At time.Time
	// Records added at At; none: the event advances the watermark to At.
	Records []string
	// Watermark marks a watermark advance.
	Watermark bool
}

// Stream is an unbounded input in fixed windows.
type Stream struct {
	Events []StreamEvent
	// Size is the fixed windows' length; windows start at multiples of it
	// since the Unix epoch.
	Size time.Duration
	// Lateness is the allowed lateness.
	Lateness time.Duration
	// Destination names a record's destination.
	Destination func(string) string
}

// WindowName is a window's name in the folder: its start and end, UTC, to
// the second (milliseconds where they are not whole).
func WindowName(start, end time.Time) string {
	f := func(t time.Time) string {
		t = t.UTC()
		if t.Nanosecond() == 0 {
			return t.Format("20060102T150405Z")
		}
		return t.Format("20060102T150405.000Z")
	}
	return f(start) + "-" + f(end)
}

// Partitions is what a run of the stream leaves in the folder: per
// partition ("<destination>@<window>") the records it holds, and the
// records Beam drops as later than their window's expiry. A record is
// dropped when the watermark, as it is added, is past its window's last
// instant (its end less a millisecond) plus the allowed lateness; every
// other record lands in its window, in one pane or another.
func (s Stream) Partitions() (kept map[string][]string, dropped []string) {
	kept = map[string][]string{}
	var watermark time.Time
	for _, e := range s.Events {
		if e.Watermark {
			if e.At.After(watermark) {
				watermark = e.At
			}
			continue
		}
		start := e.At.Truncate(s.Size)
		end := start.Add(s.Size)
		expiry := end.Add(-time.Millisecond).Add(s.Lateness)
		for _, r := range e.Records {
			if !watermark.IsZero() && expiry.Before(watermark) {
				dropped = append(dropped, r)
				continue
			}
			id := s.Destination(r) + "@" + WindowName(start, end)
			kept[id] = append(kept[id], r)
		}
	}
	return kept, dropped
}

// MarkerKey is the folder-relative key of a window's completion marker.
func MarkerKey(window string) string {
	if window == "global" {
		return "_SUCCESS"
	}
	return "_SUCCESS-" + window
}

// markerLine is what the oracle reads of a line of a completion marker
// that lists its window's files.
type markerLine struct {
	Key       string `json:"key"`
	Bytes     int64  `json:"bytes"`
	Records   int64  `json:"records"`
	CRC64NVME uint64 `json:"crc64nvme"`
}

// judgeMarkers checks the windows' completion markers against the
// partitions found: a window whose every partition is complete and right
// has its marker (once the run that completes it has finished); a marker
// exists only for such a window; a listing marker lists exactly the
// window's files with their sizes, record counts and CRC64NVME, and an
// empty one is empty.
func judgeMarkers(s *Snapshot, e Expect, parts map[string]*partition, v *Verdict) {
	windows := map[string][]*partition{}
	for _, p := range parts {
		windows[p.window] = append(windows[p.window], p)
	}
	var w string // the window judged
	bad := func(incomplete bool, format string, args ...any) {
		v.Problems = append(v.Problems, Problem{Incomplete: incomplete, Window: w, Text: fmt.Sprintf(format, args...)})
	}
	for _, rel := range slices.Sorted(maps.Keys(s.Objects)) {
		if !IsCompletionMarker(rel) {
			continue
		}
		w = strings.TrimPrefix(rel, "_SUCCESS-")
		if rel == "_SUCCESS" {
			w = "global"
		}
		if _, ok := windows[w]; !ok || e.Markers == "none" {
			bad(false, "completion marker %s for no window of the folder's (markers %q)", rel, e.Markers)
		}
	}
	if e.Markers == "none" {
		return
	}
	for _, w = range slices.Sorted(maps.Keys(windows)) {
		key := MarkerKey(w)
		complete := true
		var files []string
		for _, p := range windows[w] {
			if p.manifest == "" || v.Owner[p.dest+"@"+p.window] == "" {
				complete = false
			}
			files = append(files, p.files...)
		}
		m, has := s.Objects[key]
		switch {
		case !has && complete:
			// A run ended between the window's manifests and its marker.
			// Nothing in the folder tells that a marker is due: the
			// CompletionMarker setting is not recorded there.
			bad(true, "window %s: every partition is complete and its completion marker %s is missing", w, key)
			v.Problems[len(v.Problems)-1].Unseen = true
			continue
		case !has:
			continue
		case !complete:
			bad(false, "window %s: completion marker %s while a partition of the window is not complete", w, key)
			continue
		}
		if e.Markers == "success" {
			if len(m.Body) != 0 {
				bad(false, "completion marker %s holds %d bytes; want it empty", key, len(m.Body))
			}
			continue
		}
		listed := map[string]markerLine{}
		for i, line := range bytes.Split(bytes.TrimSuffix(m.Body, []byte{'\n'}), []byte{'\n'}) {
			var l markerLine
			if err := json.Unmarshal(line, &l); err != nil {
				bad(false, "completion marker %s line %d: %v", key, i+1, err)
				return
			}
			listed[l.Key] = l
		}
		for _, rel := range files {
			o := s.Objects[rel]
			l, found := takeListed(listed, rel)
			f, _ := ParseFile(rel)
			recs, _ := Records(f.Ext, o.Body)
			switch {
			case !found:
				bad(false, "completion marker %s does not list %s", key, rel)
			case l.Bytes != o.Size || l.Records != int64(len(recs)) || l.CRC64NVME != crc64nvme.Checksum(o.Body):
				bad(false, "completion marker %s gives %s %d bytes, %d records, CRC64NVME %016x; it has %d, %d, %016x", key, rel, l.Bytes, l.Records, l.CRC64NVME, o.Size, len(recs), crc64nvme.Checksum(o.Body))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(listed)) {
			bad(false, "completion marker %s lists %s, which is not in its window", key, k)
		}
	}
}
