package sink

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/settingsmarker"
	"github.com/s3once/s3once/internal/testkit/golden"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// markerPairs are the (format, compression) pairs whose markers
// internal/settingsmarker's tests cut: every built-in format and codec, and
// a program's codec.
var markerPairs = []struct{ format, compression string }{
	{"text", "none"}, {"text", "gzip"}, {"jsonl", "zstd"}, {"csv", "gzip"},
	{"parquet", "none"}, {"text", "test-std-gzip"},
}

// TestSettingsMarkerPerPair: the markers under
// internal/settingsmarker/testdata/pairs are what this build records for
// each pair (the library versions and canary digests, which change with the
// libraries, replaced by fixed values), and each holds what
// settingsmarker.Required asks of its pair, so that the table and
// markerSettings cannot drift apart.
func TestSettingsMarkerPerPair(t *testing.T) {
	fixed := map[string]string{
		"compression-canary": "canary-digest", "parquet-canary": "canary-digest",
		"compression-library": "a-library v1.0.0", "parquet-library": "a-library v1.0.0",
	}
	for _, p := range markerPairs {
		t.Run(p.format+"-"+p.compression, func(t *testing.T) {
			st, err := Config{Bucket: "bucket-name", Prefix: "out", Files: Files{Format: p.format, Compression: p.compression}}.settings()
			if err != nil {
				t.Fatal(err)
			}
			ms := st.markerSettings()
			if err := settingsmarker.Check(ms); err != nil {
				t.Fatalf("this build's marker: %v", err)
			}
			for i, s := range ms {
				if v, ok := fixed[s.Name]; ok && s.Value != "" {
					ms[i].Value = v
				}
			}
			golden.File(t, filepath.Join("..", "..", "internal", "settingsmarker", "testdata", "pairs", p.format+"-"+p.compression+".txt"), encodeSettings(ms))
			// Every setting the table names is written, with a value
			// where it asks for one.
			for _, r := range settingsmarker.Required(p.format, st.Compression) {
				v, ok := ms.Get(r.Name)
				if !ok || r.Value && v == "" {
					t.Errorf("%s = %q, %v; the table asks for it (value %v)", r.Name, v, ok, r.Value)
				}
			}
			// Every setting written is in the table or is optional.
			for _, s := range ms {
				if !slices.ContainsFunc(settingsmarker.Required(p.format, st.Compression), func(r settingsmarker.Requirement) bool { return r.Name == s.Name }) &&
					!slices.Contains(settingsmarker.Optional(), s.Name) {
					t.Errorf("setting %q is neither required nor optional", s.Name)
				}
			}
		})
	}
}

// TestDamagedSettingsMarkerRefused: a folder's marker cut to its first
// five lines (a truncated copy, a hand edit) lacks settings, and a rerun
// with another Format is refused as damaged, by the preflight and by the
// sink, naming the marker, the settings it lacks and what to do, and
// commits nothing; so is one cut to its header line, which is never taken
// for "no marker" (a folder of an earlier release). A marker of an earlier
// release, whole but without the settings added since, is taken.
func TestDamagedSettingsMarkerRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	ctx := context.Background()
	in := words(600, 5)
	run := func(format string, preflight bool) (map[string]int64, error) {
		t.Helper()
		cfg := testConfig(bucket, "out")
		cfg.Format, cfg.Compression, cfg.Shards, cfg.MaxFileRecords = format, "gzip", 2, 200
		if preflight {
			if err := Preflight(ctx, cfg); err != nil {
				return nil, err
			}
		}
		p, s := beam.NewPipelineWithRoot()
		Write(s, beam.CreateList(s, in), cfg)
		pr, err := beam.Run(ctx, "prism", p)
		return counters(pr), err
	}
	if _, err := run("text", false); err != nil {
		t.Fatal(err)
	}
	key := ownkeys.SettingsKey("out")
	whole := s3test.Object(t, c, bucket, key)
	put := func(b []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.SplitAfter(string(whole), "\n")
	ms, err := decodeSettings(whole)
	if err != nil {
		t.Fatal(err)
	}
	// The required settings of the lines after the fifth.
	var lost []string
	for _, s := range ms[4:] {
		if !slices.Contains(settingsmarker.Optional(), s.Name) {
			lost = append(lost, s.Name)
		}
	}
	if len(lost) < 2 {
		t.Fatalf("the marker has %d required settings after its fifth line: %q", len(lost), whole)
	}

	for _, tc := range []struct {
		name, marker string
		says         []string
	}{
		{"first five lines", strings.Join(lines[:5], ""), []string{"lacks settings " + strings.Join(lost, ", ") + " (damaged"}},
		{"header line only", lines[0], []string{"holds no setting but its header line"}},
	} {
		put([]byte(tc.marker))
		before := relative(t, c, bucket, "out")
		for _, preflight := range []bool{true, false} {
			_, err := run("jsonl", preflight)
			if err == nil || !errcode.Has(errors.New(err.Error()), errcode.SettingsDamaged) {
				t.Fatalf("%s, preflight %v: a rerun with Format jsonl: %v", tc.name, preflight, err)
			}
			// The preflight's error is typed; the pipeline's reaches the
			// driver as text through the runner.
			if preflight {
				var d *SettingsDamagedError
				if !errors.Is(err, ErrPreflight) || !errors.Is(err, ErrSettingsDamaged) || !errors.As(err, &d) ||
					d.Bucket != bucket || d.Key != key || len(d.Missing) == 0 {
					t.Errorf("%s: the preflight's error: %#v", tc.name, err)
				}
			}
			msg := err.Error()
			want := append([]string{"s3://" + bucket + "/" + key, "damaged: truncated or edited outside s3once",
				"restore it from the settings", "delete the folder's files and its " + ownkeys.SettingsName, "fresh Prefix"}, tc.says...)
			if !preflight {
				want = append(want, "nothing of this run was committed")
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s, preflight %v: the failure does not say %q: %s", tc.name, preflight, w, msg)
				}
			}
			for _, w := range []string{"earlier s3once release", "Format text -> jsonl"} {
				if strings.Contains(msg, w) {
					t.Errorf("%s, preflight %v: the failure says %q: %s", tc.name, preflight, w, msg)
				}
			}
			if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
				t.Errorf("%s, preflight %v: the refused run changed the folder", tc.name, preflight)
			}
			checkClean(t, c, bucket)
		}
	}

	// A marker of an earlier release: every required setting, none of
	// those added since. The same settings go through and keep every file.
	var old settingsmarker.Settings
	for _, s := range ms {
		if !slices.Contains(settingsmarker.Optional(), s.Name) {
			old = append(old, s)
		}
	}
	if len(old) == len(ms) {
		t.Fatalf("the marker holds no optional setting: %q", whole)
	}
	put(encodeSettings(old))
	before := relative(t, c, bucket, "out")
	files := 0
	for k := range before {
		if ownkeys.IsFileName("out", "out/"+k) {
			files++
		}
	}
	m, err := run("text", true)
	if err != nil {
		t.Fatalf("a rerun into a folder of an earlier release's marker: %v", err)
	}
	if got := m["barrier_kept"]; files == 0 || got != int64(files) {
		t.Errorf("the rerun kept %d files, want %d", got, files)
	}
	if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
		t.Errorf("a rerun with the same settings changed the folder")
	}
}

// TestSettingsGuardDamaged: the commit stage's check and the marker's
// write refuse a damaged marker, typed, with what the run did, whether the
// folder holds files or not; never as "no marker".
func TestSettingsGuardDamaged(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	ctx := context.Background()
	cm := s3bucket.New(c, s3bucket.Options{})
	now := goldenMarkers()["settings_v1.txt"]
	whole := encodeSettings(now)
	cut := whole[:bytes.LastIndexByte(whole[:len(whole)-1], '\n')+1] // without its last line
	var all []string
	for _, r := range settingsmarker.Required("", "") {
		all = append(all, r.Name)
	}
	for _, tc := range []struct {
		name    string
		marker  []byte
		file    bool
		missing []string
	}{
		{"header only", []byte("s3once-settings 1\n"), false, all},
		{"header only, with files", []byte("s3once-settings 1\n"), true, all},
		{"last line cut", cut, true, []string{"shards"}},
	} {
		prefix := strings.ReplaceAll(tc.name, " ", "-")
		prefix = strings.ReplaceAll(prefix, ",", "")
		key := ownkeys.SettingsKey(prefix)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(tc.marker)}); err != nil {
			t.Fatal(err)
		}
		if tc.file {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/d/global-pane-0-shard-00000-of-00008-file-00000.jsonl.gz"), Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
		}
		var g settingsGuard
		err := g.check(ctx, cm, bucket, prefix, now, "this run committed nothing")
		var d *SettingsDamagedError
		if !errors.As(err, &d) || !errors.Is(err, ErrSettingsDamaged) || errors.Is(err, ErrSettingsChanged) ||
			d.Bucket != bucket || d.Key != key || !strings.Contains(err.Error(), "this run committed nothing") {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(d.Missing, tc.missing) {
			t.Errorf("%s: missing %q, want %q", tc.name, d.Missing, tc.missing)
		}
		if err := stampFolder(ctx, cm, bucket, prefix, now, ""); !errors.Is(err, ErrSettingsDamaged) {
			t.Errorf("%s: a write that meets the damaged marker: %v", tc.name, err)
		}
		if got := s3test.Object(t, c, bucket, key); !bytes.Equal(got, tc.marker) {
			t.Errorf("%s: the damaged marker was replaced by %q", tc.name, got)
		}
	}
}
