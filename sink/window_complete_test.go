package sink

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
)

func init() { register.Function2x0(stampSlot) }

// slotBase is the start of slot 0: a record "<letter><n>-h<slot>" lies ten
// minutes into the one-hour window that starts 2 x slot hours later.
var slotBase = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// slotTime is the event time of a record of slotRun.
func slotTime(rec string) time.Time {
	_, h, _ := strings.Cut(rec, "-h")
	n, _ := strconv.Atoi(h)
	return slotBase.Add(time.Duration(n)*2*time.Hour + 10*time.Minute)
}

// slotWindow is the window's name of slot n.
func slotWindow(n int) string {
	start := slotBase.Add(time.Duration(n) * 2 * time.Hour)
	return start.Format("20060102T150405Z") + "-" + start.Add(time.Hour).Format("20060102T150405Z")
}

// stampSlot gives a record of slotRun its event time.
func stampSlot(rec string, emit func(beam.EventTime, string)) {
	emit(mtime.FromTime(slotTime(rec)), rec)
}

// slotRun writes recs in one-hour fixed windows (slotTime), one
// destination per first letter, in files of at most 2 records of one
// shard: bounded input (beam.CreateList, the run-wide barrier), or a test
// stream that adds each slot's records in slot order (no barrier, a
// manifest per window at its expiry).
func slotRun(t *testing.T, bucket, prefix string, recs []string, bounded bool, tune func(*Config)) (map[string]int64, error) {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	var col beam.PCollection
	if bounded {
		col = beam.ParDo(s, stampSlot, beam.CreateList(s, recs))
	} else {
		ts := teststream.NewConfig()
		bySlot := map[time.Time][]string{}
		for _, r := range recs {
			bySlot[slotTime(r)] = append(bySlot[slotTime(r)], r)
		}
		for _, at := range slices.SortedFunc(maps.Keys(bySlot), time.Time.Compare) {
			if err := ts.AddElementList(at.UnixMilli(), bySlot[at]); err != nil {
				t.Fatal(err)
			}
		}
		if err := ts.AdvanceWatermarkToInfinity(); err != nil {
			t.Fatal(err)
		}
		col = teststream.Create(s, ts)
	}
	cfg := testConfig(bucket, prefix)
	cfg.Destination = firstLetter
	cfg.Shards = 1
	cfg.MaxFileRecords = 2
	if tune != nil {
		tune(&cfg)
	}
	if applies, why := barrierApplies(mustSettings(t, cfg), s, col); applies != bounded {
		t.Fatalf("barrier %v for bounded %v: %s", applies, bounded, why)
	}
	Write(s, beam.WindowInto(s, window.NewFixedWindows(time.Hour), col), cfg)
	pr, err := beam.Run(context.Background(), "prism", p)
	return counters(pr), err
}

// TestChangedRerunIntoUnfinishedWindow: unbounded input, no barrier. A
// first run's window is left without its manifests (as a run that ended
// before the window expired leaves it); the rerun moves the record of
// letter=d's last file to letter=f. Its other letter=d files come out
// byte-identical and are committed (they are), so letter=d then holds the
// first run's last file beside the rerun's: the manifest stage finds it by
// a listing, writes no manifest for letter=d and no completion marker for
// the window, and fails the run naming the file; letter=e and the new
// letter=f, which hold only the rerun's files, get their manifests. Once
// letter=d is deleted, the same rerun completes the window.
func TestChangedRerunIntoUnfinishedWindow(t *testing.T) {
	bucket := srv.Bucket(t)
	c := testClient()
	ctx := context.Background()
	marker := func(cfg *Config) { cfg.CompletionMarker = MarkerManifest }
	win := slotWindow(0)
	first := []string{"d01-h0", "d02-h0", "d03-h0", "d04-h0", "d05-h0", "e01-h0"}
	if _, err := slotRun(t, bucket, "out", first, false, marker); err != nil {
		t.Fatal(err)
	}
	stray := ownkeys.PartitionFilePrefix("out", "letter=d", win) + "0-shard-00000-of-00001-file-00002.txt"
	for _, k := range []string{stray, ownkeys.ManifestKey("out", "letter=d", win), ownkeys.MarkerKey("out", win, 0)} {
		if _, ok := everything(t, c, bucket, "out")[strings.TrimPrefix(k, "out/")]; !ok {
			t.Fatalf("the first run wrote no %s: %v", k, keysOf(everything(t, c, bucket, "out")))
		}
	}
	// The window's manifests and marker were never written.
	for _, k := range []string{ownkeys.ManifestKey("out", "letter=d", win), ownkeys.ManifestKey("out", "letter=e", win), ownkeys.MarkerKey("out", win, 0)} {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}

	second := []string{"d01-h0", "d02-h0", "d03-h0", "d04-h0", "f05-h0", "e01-h0"}
	_, err := slotRun(t, bucket, "out", second, false, marker)
	if err == nil {
		t.Fatal("the changed rerun succeeded over the first run's letter=d file")
	}
	msg := err.Error()
	if !errcode.Has(errors.New(msg), errcode.PartitionChanged) {
		t.Errorf("the failure lacks %s: %s", errcode.PartitionChanged.Token(), msg)
	}
	for _, want := range []string{stray, "that this run did not write", "beside the files it committed there", "holds files of both", "wrote no manifest for it", "fresh Prefix"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	for _, banned := range []string{"would hold", "nothing of this run was committed", "is complete"} {
		if strings.Contains(msg, banned) {
			t.Errorf("the failure says %q: %s", banned, msg)
		}
	}
	after := everything(t, c, bucket, "out")
	for _, k := range []string{ownkeys.ManifestKey("out", "letter=d", win), ownkeys.MarkerKey("out", win, 0)} {
		if _, ok := after[strings.TrimPrefix(k, "out/")]; ok {
			t.Errorf("the refused window got %s", k)
		}
	}
	if _, ok := after[strings.TrimPrefix(stray, "out/")]; !ok {
		t.Errorf("%s is gone", stray)
	}
	for _, dest := range []string{"letter=e", "letter=f"} {
		var listed []string
		for _, e := range manifestOf(t, bucket, "out", dest, win) {
			listed = append(listed, e.Key)
		}
		var present []string
		for k := range after {
			if ownkeys.IsPartitionFile("", dest, win, k) {
				present = append(present, "out/"+k)
			}
		}
		slices.Sort(present)
		if len(present) == 0 || !slices.Equal(listed, present) {
			t.Errorf("the manifest of %s lists %v; the partition holds %v", dest, listed, present)
		}
	}

	// The remedy the failure gives: delete the partition's files, run
	// again.
	for k := range after {
		if ownkeys.IsPartitionFile("", "letter=d", win, k) {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("out/" + k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := slotRun(t, bucket, "out", second, false, marker); err != nil {
		t.Fatalf("the rerun once letter=d was deleted: %v", err)
	}
	if n := len(manifestOf(t, bucket, "out", "letter=d", win)); n != 2 {
		t.Errorf("the manifest of letter=d lists %d files; want the rerun's 2", n)
	}
	if _, ok := everything(t, c, bucket, "out")[strings.TrimPrefix(ownkeys.MarkerKey("out", win, 0), "out/")]; !ok {
		t.Error("the window has no completion marker once every partition is complete")
	}
}

// TestCompletionMarkerClosesWindow: a window whose completion marker
// exists is complete. A rerun of the same records succeeds and changes
// nothing; a rerun that adds a partition (letter=b) to that window is
// refused before the new partition's file is committed, naming it and the
// marker, and the folder stays as it was: by the run-wide barrier for
// bounded input (nothing committed), by the commit stage for unbounded
// input (with FinalizeCommit "always" too, where race-enabled builds do
// not finalize). The same partition added to a window without a marker is
// written. For both kinds of marker: a listing one, and an empty one, in
// whose window only files whose keys already hold an object are taken.
func TestCompletionMarkerClosesWindow(t *testing.T) {
	for _, bounded := range []bool{true, false} {
		for _, mode := range []string{MarkerManifest, MarkerSuccess} {
			name := "unbounded-" + mode
			if bounded {
				name = "bounded-" + mode
			}
			t.Run(name, func(t *testing.T) { checkWindowClosed(t, bounded, mode) })
		}
	}
}

func checkWindowClosed(t *testing.T, bounded bool, mode string) {
	bucket := srv.Bucket(t)
	c := testClient()
	tune := func(always bool) func(*Config) {
		return func(cfg *Config) {
			cfg.CompletionMarker = mode
			if always {
				cfg.FinalizeCommit = FinalizeAlways
			}
		}
	}
	first := []string{"a01-h0", "a02-h0", "a03-h0"}
	if _, err := slotRun(t, bucket, "out", first, bounded, tune(false)); err != nil {
		t.Fatal(err)
	}
	before := everything(t, c, bucket, "out")
	mkey := ownkeys.MarkerKey("out", slotWindow(0), 0)
	if _, ok := before[strings.TrimPrefix(mkey, "out/")]; !ok {
		t.Fatalf("the first run wrote no completion marker %s: %v", mkey, keysOf(before))
	}
	if _, err := slotRun(t, bucket, "out", first, bounded, tune(false)); err != nil {
		t.Fatalf("a rerun of the same records: %v", err)
	}
	if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("a rerun of the same records changed the folder: %v, was %v", keysOf(after), keysOf(before))
	}

	added := append(slices.Clone(first), "b01-h0")
	newFile := ownkeys.PartitionFilePrefix("out", "letter=b", slotWindow(0)) + "0-shard-00000-of-00001-file-00000.txt"
	runs := []bool{false}
	if !bounded && finalizeSupported {
		runs = append(runs, true)
	}
	for _, always := range runs {
		counts, err := slotRun(t, bucket, "out", added, bounded, tune(always))
		if err == nil {
			t.Fatalf("always %v: a rerun adding letter=b to the complete window succeeded", always)
		}
		msg := err.Error()
		if !errcode.Has(errors.New(msg), errcode.WindowComplete) {
			t.Errorf("always %v: the failure lacks %s: %s", always, errcode.WindowComplete.Token(), msg)
		}
		wants := []string{"is complete", "s3://" + bucket + "/" + mkey, "this run would add 1 file(s)", "s3://" + bucket + "/" + newFile, "fresh Prefix"}
		if bounded {
			wants = append(wants, "nothing of this run was committed")
			if n := counts["files_committed"]; n != 0 {
				t.Errorf("files_committed = %d; want 0", n)
			}
		} else {
			wants = append(wants, "this file was not committed")
		}
		for _, want := range wants {
			if !strings.Contains(msg, want) {
				t.Errorf("always %v: the failure does not say %q: %s", always, want, msg)
			}
		}
		if after := everything(t, c, bucket, "out"); !maps.EqualFunc(before, after, bytes.Equal) {
			t.Errorf("always %v: the refused run changed the folder: %v, was %v", always, keysOf(after), keysOf(before))
		}
	}
	if bounded {
		checkClean(t, c, bucket)
	}

	// letter=b in a window without a marker: written, with its marker.
	if _, err := slotRun(t, bucket, "out", append(slices.Clone(first), "b01-h1"), bounded, tune(false)); err != nil {
		t.Fatalf("a run adding letter=b to a new window: %v", err)
	}
	after := everything(t, c, bucket, "out")
	for _, k := range []string{ownkeys.ManifestKey("out", "letter=b", slotWindow(1)), ownkeys.MarkerKey("out", slotWindow(1), 0)} {
		if _, ok := after[strings.TrimPrefix(k, "out/")]; !ok {
			t.Errorf("the new window has no %s: %v", k, keysOf(after))
		}
	}
}
