package scenario

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// settings are the byte-affecting settings a run draws (and FinalizeCommit,
// which is not byte-affecting).
type settings struct {
	Format          string // text, jsonl
	Compression     string // none, gzip, zstd
	Shards          int
	MaxFileRecords  int64
	MaxFileBytes    int64
	TargetFileBytes int64
	OutputVersion   int
	FinalizeCommit  string // auto, always
}

func (s settings) String() string {
	return fmt.Sprintf("%s/%s shards=%d recs=%d bytes=%d target=%d v%d %s", s.Format, s.Compression, s.Shards,
		s.MaxFileRecords, s.MaxFileBytes, s.TargetFileBytes, s.OutputVersion, s.FinalizeCommit)
}

// bytesKey is every setting but FinalizeCommit: two runs whose keys differ
// write other bytes or names into the folder.
func (s settings) bytesKey() settings { s.FinalizeCommit = ""; return s }

// ext is the extension of the run's files.
func (s settings) ext() string {
	e := map[string]string{"text": ".txt", "jsonl": ".jsonl"}[s.Format]
	return e + map[string]string{"none": "", "gzip": ".gz", "zstd": ".zst"}[s.Compression]
}

// valid: automatic sharding needs output version 2 and a TargetFileBytes
// within MaxFileBytes.
func (s settings) valid() bool {
	if s.TargetFileBytes == 0 {
		return true
	}
	return s.OutputVersion == 2 && (s.MaxFileBytes == 0 || s.TargetFileBytes <= s.MaxFileBytes)
}

// knobs are the settings one step may change, each with its values.
var knobs = []struct {
	name   string
	values []any
	set    func(*settings, any)
	get    func(settings) any
}{
	{"Format", []any{"text", "jsonl"}, func(s *settings, v any) { s.Format = v.(string) }, func(s settings) any { return s.Format }},
	{"Compression", []any{"none", "gzip", "zstd"}, func(s *settings, v any) { s.Compression = v.(string) }, func(s settings) any { return s.Compression }},
	{"Shards", []any{1, 2, 3}, func(s *settings, v any) { s.Shards = v.(int) }, func(s settings) any { return s.Shards }},
	{"MaxFileRecords", []any{int64(0), int64(7), int64(20)}, func(s *settings, v any) { s.MaxFileRecords = v.(int64) }, func(s settings) any { return s.MaxFileRecords }},
	{"MaxFileBytes", []any{int64(0), int64(1024), int64(2048)}, func(s *settings, v any) { s.MaxFileBytes = v.(int64) }, func(s settings) any { return s.MaxFileBytes }},
	{"TargetFileBytes", []any{int64(0), int64(1024), int64(1536)}, func(s *settings, v any) { s.TargetFileBytes = v.(int64) }, func(s settings) any { return s.TargetFileBytes }},
	{"OutputVersion", []any{1, 2}, func(s *settings, v any) { s.OutputVersion = v.(int) }, func(s settings) any { return s.OutputVersion }},
	{"FinalizeCommit", []any{"auto", "always"}, func(s *settings, v any) { s.FinalizeCommit = v.(string) }, func(s settings) any { return s.FinalizeCommit }},
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// randomSettings draws a first run's settings.
func randomSettings(r *rand.Rand) settings {
	for {
		var s settings
		for _, k := range knobs {
			k.set(&s, pick(r, k.values))
		}
		if r.IntN(3) > 0 { // most folders are of the latest version
			s.OutputVersion = 2
		} else {
			s.OutputVersion = 1
		}
		if r.IntN(3) == 0 {
			// Full files: one shard rolled by records alone, so that
			// records sorting after the others (randomInput's counts are
			// often a multiple of MaxFileRecords) make a new file and keep
			// every old one.
			s.Shards, s.MaxFileBytes, s.TargetFileBytes = 1, 0, 0
			s.MaxFileRecords = pick(r, []int64{7, 20})
		}
		if s.OutputVersion == 1 {
			// Output version 1 is written only through the run-wide
			// barrier (the model expects a later run's FinalizeCommit
			// "always" refused).
			s.FinalizeCommit = "auto"
		}
		if s.valid() {
			return s
		}
	}
}

// changeSettings changes n settings (1 or 2) to other values; it returns
// the names changed.
func changeSettings(r *rand.Rand, s settings, n int, only []string) (settings, []string) {
	for range 100 {
		out := s
		var names []string
		for _, i := range r.Perm(len(knobs))[:n] {
			k := knobs[i]
			if only != nil && !slices.Contains(only, k.name) {
				continue
			}
			for {
				v := pick(r, k.values)
				if v != k.get(s) {
					k.set(&out, v)
					break
				}
			}
			names = append(names, k.name)
		}
		if len(names) > 0 && out.valid() {
			return out, names
		}
	}
	return s, nil
}

// The records: "<letter><5 digits>", the destination is the letter. A
// first run's records are numbered from 1000 in steps of 10, so that new
// records can sort before (below 1000), between (odd numbers) and after
// them.
var letters = []string{"a", "b", "c", "d", "e", "f"}

// rec is the record numbered n of the destination letter, padded so that
// records differ in length.
func rec(letter string, n int) string {
	return fmt.Sprintf("%s%05d-%s", letter, n, strings.Repeat("q", n%23))
}

func randomInput(r *rand.Rand, dests int) []string {
	var in []string
	for _, l := range r.Perm(len(letters))[:dests] {
		n := 5 + r.IntN(60)
		if r.IntN(2) == 0 {
			// A multiple of every MaxFileRecords drawn: with one shard, the
			// last file is full, and records sorting after it make a new
			// file rather than change one.
			n = 140
		}
		for i := range n {
			in = append(in, rec(letters[l], 1000+10*i))
		}
	}
	return in
}

func byDest(in []string) map[string][]string {
	m := map[string][]string{}
	for _, x := range in {
		d := "letter=" + x[:1]
		m[d] = append(m[d], x)
	}
	return m
}

// inputChanges are the kinds of input change a step may make.
var inputChanges = []string{"identical", "identical", "identical", "subset", "superset-before", "superset-between", "superset-after", "superset-after", "superset-after", "move", "drop-destination", "add-destination", "add-destination", "empty"}

// fullFiles is MaxFileRecords where files roll by records alone in one
// shard (so a partition whose record count is a multiple of it holds full
// files only), else 0.
func (s settings) fullFiles() int64 {
	if s.Shards == 1 && s.MaxFileBytes == 0 && s.TargetFileBytes == 0 {
		return s.MaxFileRecords
	}
	return 0
}

// changeInput returns in changed by kind. full is the settings' fullFiles:
// records after the others go, where it can, to a destination of full
// files.
func changeInput(r *rand.Rand, in []string, kind string, full int64) []string {
	m := byDest(in)
	dests := slices.Sorted(maps.Keys(m))
	if len(dests) == 0 && kind != "add-destination" {
		return in
	}
	if kind == "superset-after" && full > 0 {
		if whole := slices.DeleteFunc(slices.Clone(dests), func(d string) bool { return int64(len(m[d]))%full != 0 }); len(whole) > 0 {
			dests = whole
		}
	}
	out := slices.Clone(in)
	switch kind {
	case "subset":
		d := pick(r, dests)
		drop := pick(r, m[d])
		out = slices.DeleteFunc(out, func(s string) bool { return s == drop })
	case "superset-before", "superset-between", "superset-after":
		d := pick(r, dests)
		l := strings.TrimPrefix(d, "letter=")
		for i := range 1 + r.IntN(12) {
			var n int
			switch kind {
			case "superset-before":
				n = 100 + i
			case "superset-between":
				n = 1000 + 10*r.IntN(len(m[d])) + 1 + 2*(i%4)
			default:
				n = 90000 + i
			}
			if x := rec(l, n); !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	case "move":
		d := pick(r, dests)
		moved := pick(r, m[d])
		other := pick(r, letters)
		for other == moved[:1] {
			other = pick(r, letters)
		}
		i := slices.Index(out, moved)
		out[i] = other + moved[1:]
		if slices.Contains(in, out[i]) {
			out = slices.Delete(out, i, i+1) // moved onto a record already there: dropped instead
		}
	case "drop-destination":
		d := pick(r, dests)
		out = slices.DeleteFunc(out, func(s string) bool { return "letter="+s[:1] == d })
	case "add-destination":
		var free []string
		for _, l := range letters {
			if _, ok := m["letter="+l]; !ok {
				free = append(free, l)
			}
		}
		if len(free) == 0 {
			return out
		}
		l := pick(r, free)
		for i := range 5 + r.IntN(30) {
			out = append(out, rec(l, 1000+10*i))
		}
	case "empty":
		out = nil
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Damage between runs.
var damages = []string{
	"marker-truncate", "marker-truncate", "marker-delete", "marker-edit",
	"manifest-truncate", "manifest-delete", "manifest-edit-records", "manifest-edit-size",
	"file-delete", "file-copy-next", "file-same-size",
}
