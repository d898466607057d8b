package sink

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
	"github.com/s3once/s3once/internal/s3bucket"
	"github.com/s3once/s3once/internal/testkit/s3test"
)

// settingsRun writes in to prefix on prism with the given compression and
// shards, after the preflight when asked; it returns the first error.
func settingsRun(t *testing.T, bucket, prefix string, in []string, compression string, shards int, preflight bool) (map[string]int64, error) {
	t.Helper()
	return settingsRunV(t, bucket, prefix, in, compression, shards, preflight, 0)
}

// TestChangedSettingsRerunRefused: a rerun into a folder with other
// byte-affecting settings (Compression, Shards) is refused by the preflight,
// naming each setting, and without the preflight by the sink before any file
// is committed, leaving the folder byte for byte as the first run made it,
// its settings marker included, and no upload behind. A rerun with the same
// settings goes through; the sweep keeps the marker; a folder without one
// (written by an earlier release) gets it.
func TestChangedSettingsRerunRefused(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	in := words(1500, 3)
	if _, err := settingsRun(t, bucket, "out", in, "gzip", 2, true); err != nil {
		t.Fatal(err)
	}
	before := relative(t, c, bucket, "out")
	markerKey := ownkeys.SettingsKey("out")
	marker := s3test.Object(t, c, bucket, markerKey)
	ms, err := decodeSettings(marker)
	if err != nil {
		t.Fatalf("the marker the run wrote: %v", err)
	}
	if v, _ := ms.Get("compression"); v != "gzip" {
		t.Fatalf("the marker records compression %q", v)
	}
	unchanged := func(when string) {
		t.Helper()
		if !maps.EqualFunc(before, relative(t, c, bucket, "out"), bytes.Equal) {
			t.Errorf("%s: the folder changed", when)
		}
		if !bytes.Equal(s3test.Object(t, c, bucket, markerKey), marker) {
			t.Errorf("%s: the settings marker changed", when)
		}
		checkClean(t, c, bucket)
	}

	for _, tc := range []struct {
		compression string
		shards      int
		says        string
	}{
		{"zstd", 2, "Compression gzip -> zstd"},
		{"gzip", 4, "Shards 2 -> 4"},
		{"none", 3, "Compression gzip -> none"},
	} {
		_, err := settingsRun(t, bucket, "out", in, tc.compression, tc.shards, true)
		if !errors.Is(err, ErrSettingsChanged) || !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("the preflight of a rerun with %s: %v", tc.says, err)
		}
		unchanged("after the preflight")

		_, err = settingsRun(t, bucket, "out", in, tc.compression, tc.shards, false)
		if err == nil {
			t.Fatalf("a rerun with %s succeeded", tc.says)
		}
		msg := err.Error()
		for _, want := range []string{tc.says, "nothing of this run was committed", "fresh Prefix", "s3://" + bucket + "/out/ has other settings"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the failure does not say %q: %s", want, msg)
			}
		}
		if !errcode.Has(errors.New(msg), errcode.SettingsChanged) {
			t.Errorf("the failure lacks %s: %s", errcode.SettingsChanged.Token(), msg)
		}
		unchanged("after a rerun with " + tc.says)
	}

	m, err := settingsRun(t, bucket, "out", in, "gzip", 2, true)
	if err != nil {
		t.Fatalf("a rerun with the same settings: %v", err)
	}
	if got := m["barrier_kept"]; got != int64(len(before)) {
		t.Errorf("the barrier kept %d files, want %d", got, len(before))
	}
	unchanged("after a rerun with the same settings")

	sweep(t, c, bucket)
	unchanged("after the sweep")

	// A folder an earlier release wrote has files and no marker: it is of
	// output version 1. A run of the latest version is refused before any
	// commit, by the preflight and by the sink, with the value to set; a
	// run with OutputVersion 1 goes through, keeps every file, and leaves
	// no marker, since the files' settings are nowhere recorded.
	if _, err := settingsRunV(t, bucket, "legacy", in, "gzip", 2, true, 1); err != nil {
		t.Fatal(err)
	}
	legacyMarker := ownkeys.SettingsKey("legacy")
	if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(legacyMarker)}); err != nil {
		t.Fatal(err)
	}
	legacy := relative(t, c, bucket, "legacy")
	for _, preflight := range []bool{true, false} {
		_, err := settingsRun(t, bucket, "legacy", in, "gzip", 2, preflight)
		if err == nil || !errcode.Has(errors.New(err.Error()), errcode.SettingsChanged) || !strings.Contains(err.Error(), "set OutputVersion: 1") || !strings.Contains(err.Error(), "earlier s3once release") {
			t.Errorf("a run of output version 2 into a folder without a marker (preflight %v): %v", preflight, err)
		}
		if !maps.EqualFunc(legacy, relative(t, c, bucket, "legacy"), bytes.Equal) {
			t.Errorf("the refused run changed the folder")
		}
		checkClean(t, c, bucket)
	}
	m, err = settingsRunV(t, bucket, "legacy", in, "gzip", 2, true, 1)
	if err != nil {
		t.Fatalf("a rerun with OutputVersion 1 into a folder without a marker: %v", err)
	}
	if got := m["barrier_kept"]; got != int64(len(legacy)) {
		t.Errorf("the rerun with OutputVersion 1 kept %d files, want %d", got, len(legacy))
	}
	if !maps.EqualFunc(legacy, relative(t, c, bucket, "legacy"), bytes.Equal) {
		t.Errorf("the rerun with OutputVersion 1 changed the folder")
	}
	if keys := s3test.Keys(t, c, bucket, legacyMarker); len(keys) != 0 {
		t.Errorf("a folder of an earlier release was stamped with a marker: %v", keys)
	}
}

// settingsRunV is settingsRun with an output version.
func settingsRunV(t *testing.T, bucket, prefix string, in []string, compression string, shards int, preflight bool, version int) (map[string]int64, error) {
	t.Helper()
	cfg := testConfig(bucket, prefix)
	cfg.Compression, cfg.Shards, cfg.OutputVersion = compression, shards, version
	cfg.MaxFileRecords = 200
	if preflight {
		if err := Preflight(context.Background(), cfg); err != nil {
			return nil, err
		}
	}
	p, s := beam.NewPipelineWithRoot()
	Write(s, beam.CreateList(s, in), cfg)
	pr, err := beam.Run(context.Background(), "prism", p)
	return counters(pr), err
}

// TestSettingsGuard: the commit stage's check (where no barrier runs)
// refuses other settings before its first commit, writes the marker after
// it where there was none, and takes a marker another worker wrote.
func TestSettingsGuard(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	cm := s3bucket.New(c, s3bucket.Options{})
	ctx := context.Background()
	// Markers hold every setting their version requires: the golden one's,
	// with some values set.
	with := func(values ...string) markerSettings {
		ms := slices.Clone(goldenMarkers()["settings_v1.txt"])
		for i := 0; i+1 < len(values); i += 2 {
			j := slices.IndexFunc(ms, func(s setting) bool { return s.Name == values[i] })
			if j < 0 {
				t.Fatalf("no setting %q", values[i])
			}
			ms[j].Value = values[i+1]
		}
		return ms
	}
	mine := with("output-version", "2", "shards", "4")
	other := with("output-version", "2", "shards", "8")

	// A new folder: the check writes the marker, before any commit.
	var g settingsGuard
	if err := g.check(ctx, cm, bucket, "w", mine, "done"); err != nil {
		t.Fatal(err)
	}
	if got := s3test.Object(t, c, bucket, "w/_s3once_settings"); !bytes.Equal(got, encodeSettings(mine)) {
		t.Fatalf("the marker holds %q", got)
	}
	// Another worker of the same run: it finds the marker in place.
	var g2 settingsGuard
	if err := g2.check(ctx, cm, bucket, "w", mine, "done"); err != nil {
		t.Fatal(err)
	}
	// Two workers that both found no marker: the second write meets the
	// first's, with the same bytes.
	if err := stampFolder(ctx, cm, bucket, "w", mine, ""); err != nil {
		t.Fatalf("a second write of the same marker: %v", err)
	}
	// A run with other settings.
	var g3 settingsGuard
	err := g3.check(ctx, cm, bucket, "w", other, "this run committed nothing")
	var sc *SettingsChangedError
	if !errors.As(err, &sc) || len(sc.Changes) != 1 || sc.Changes[0] != (SettingChange{"Shards", "4", "8"}) || !strings.Contains(err.Error(), "committed nothing") {
		t.Fatalf("a check with other settings: %v", err)
	}
	if err := stampFolder(ctx, cm, bucket, "w", other, ""); !errors.Is(err, ErrSettingsChanged) {
		t.Fatalf("a write of other settings: %v", err)
	}
	// Module versions are recorded for information, never compared.
	lib := with("compression-library", "github.com/klauspost/compress v1.19.2", "output-version", "2", "shards", "4")
	unknown := with("compression-library", unknownLibrary, "output-version", "2", "shards", "4")
	if err := stampFolder(ctx, cm, bucket, "lib", unknown, ""); err != nil {
		t.Fatal(err)
	}
	var g5 settingsGuard
	if err := g5.check(ctx, cm, bucket, "lib", lib, ""); err != nil {
		t.Fatalf("a build with module information after a test build: %v", err)
	}
	// A marker this build cannot read is refused, not replaced.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("v/_s3once_settings"), Body: strings.NewReader("s3once-settings 9\n")}); err != nil {
		t.Fatal(err)
	}
	var g4 settingsGuard
	if err := g4.check(ctx, cm, bucket, "v", mine, ""); err == nil || !strings.Contains(err.Error(), "version 9, written by a later s3once") {
		t.Fatalf("a marker of a later version: %v", err)
	}
	// A folder with s3once files and no marker is of output version 1.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("old/d/global-pane-0-shard-00000-of-00004-file-00000.txt"), Body: strings.NewReader("x\n")}); err != nil {
		t.Fatal(err)
	}
	var g6 settingsGuard
	if err := g6.check(ctx, cm, bucket, "old", mine, ""); !errors.Is(err, ErrSettingsChanged) || !strings.Contains(err.Error(), "set OutputVersion: 1") {
		t.Fatalf("a folder of an earlier release: %v", err)
	}
	v1 := with("output-version", "1", "shards", "4")
	var g7 settingsGuard
	if err := g7.check(ctx, cm, bucket, "old", v1, ""); err != nil {
		t.Fatalf("a run of output version 1 into a folder of an earlier release: %v", err)
	}
	if keys := s3test.Keys(t, c, bucket, "old/_s3once_settings"); len(keys) != 0 {
		t.Fatalf("a folder of an earlier release was stamped: %v", keys)
	}
}
