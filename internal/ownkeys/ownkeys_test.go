package ownkeys

import (
	"errors"
	"strings"
	"testing"
)

const staging = ".s3once/staging/"

func TestFolder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"events", "events/"}, {"events/", "events/"}, {"a/b", "a/b/"},
	} {
		if got := Folder(c.in); got != c.want {
			t.Errorf("Folder(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		prefix, key string
		want        bool
	}{
		{"events", "events/x", true},
		{"events/", "events/x", true},
		{"events", "events-v2/x", false},
		{"events", "eventsx", false},
		{"events", "events/", false},
		{"events", "events", false},
		{"", "anything", true},
		{"tmp/s3once", "tmp/s3once-exports/a", false},
		{"tmp/s3once", "tmp/s3oncebackup.tar", false},
	} {
		if got := Under(c.prefix, c.key); got != c.want {
			t.Errorf("Under(%q, %q) = %v, want %v", c.prefix, c.key, got, c.want)
		}
	}
	if Overlap("events", "events-v2") || !Overlap("a", "a/b") || !Overlap("a/b/", "a") {
		t.Error("Overlap treats prefixes as strings, not folders")
	}
}

func TestSideObjectKeys(t *testing.T) {
	// The key every release wrote, byte for byte (the golden token's).
	const upload = "2~hQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk"
	old := ".s3once/staging/2%7EhQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk/00000000000000000004"
	if got := SideObjectKey(staging, upload, 4, ""); got != old {
		t.Fatalf("SideObjectKey without nonce = %q, want %q", got, old)
	}
	if got := SideObjectKey(".s3once/staging", upload, 4, "0a1b2c3d"); got != old+"-0a1b2c3d" {
		t.Fatalf("SideObjectKey with nonce = %q", got)
	}
	if got := SideObjectPrefix("", "u/1"); got != "u%2F1/" {
		t.Fatalf("SideObjectPrefix at the root = %q", got)
	}
	for _, c := range []struct {
		staging, upload, key string
		of, any              bool
	}{
		{staging, upload, old, true, true},
		{staging, upload, old + "-0a1b2c3d", true, true},
		{staging, upload, old + "-a_b-c", true, true},
		{staging, "other", old, false, true},
		{".s3once/staging", upload, old, true, true},
		{staging, upload, old + "-", false, false},
		{staging, upload, old + "-a/b", false, false},
		{staging, upload, old + "-a.b", false, false},
		{staging, upload, old + "-" + strings.Repeat("n", 65), false, false},
		{staging, upload, old[:len(old)-1], false, false},
		{staging, upload, old[:len(old)-1] + "x", false, false},
		{staging, upload, old + "0", false, false},
		{"reports", "2024", "reports/2024/q1.csv", false, false},
		{"reports", "2024", "reports/2024/00000000000000000001/x", false, false},
		{staging, "..", ".s3once/staging/../00000000000000000001", false, false},
		{staging, ".", ".s3once/staging/./00000000000000000001", false, false},
		{staging, "u", "warehouse/orders.parquet", false, false},
		{staging, "u", ".s3once/staging-v2/u/00000000000000000001", false, false},
		{staging, "u", ".s3once/staging/u/v/00000000000000000001", false, false},
		{staging, "u", ".s3once/staging/preflight/20240101T000000Z-0a0b0c0d0e0f/side", false, false},
	} {
		if got := IsSideObjectOf(c.staging, c.upload, c.key); got != c.of {
			t.Errorf("IsSideObjectOf(%q, %q, %q) = %v, want %v", c.staging, c.upload, c.key, got, c.of)
		}
		if got := IsSideObject(c.staging, c.key); got != c.any {
			t.Errorf("IsSideObject(%q, %q) = %v, want %v", c.staging, c.key, got, c.any)
		}
	}
}

func TestFileNames(t *testing.T) {
	n := FileName{Window: "global", Pane: 0, Shard: 3, Shards: 16, File: 0, Ext: ".jsonl.gz"}
	cases := []struct {
		prefix, dest string
		n            FileName
		want         string
	}{
		{"events", "", n, "events/global-pane-0-shard-00003-of-00016-file-00000.jsonl.gz"},
		{"events/", "country=fr/day=1", n, "events/country=fr/day=1/global-pane-0-shard-00003-of-00016-file-00000.jsonl.gz"},
		{"", "", FileName{Window: "20240601T100000Z-20240601T110000Z", Pane: 12, Shard: 0, Shards: 4, SubBatch: 3, SubBatches: 64, File: 123456},
			"20240601T100000Z-20240601T110000Z-pane-12-shard-00000-of-00004-batch-03-of-64-file-123456"},
		{"p", "", FileName{Window: "20240601T100000.250Z-20240601T110000.000Z", Shards: 1, Ext: ".csv"},
			"p/20240601T100000.250Z-20240601T110000.000Z-pane-0-shard-00000-of-00001-file-00000.csv"},
	}
	for _, c := range cases {
		got := FileKey(c.prefix, c.dest, c.n)
		if got != c.want {
			t.Errorf("FileKey = %q, want %q", got, c.want)
		}
		if !IsFileName(c.prefix, got) {
			t.Errorf("IsFileName(%q, %q) = false for a key FileKey made", c.prefix, got)
		}
	}
	for _, c := range []struct {
		prefix, key string
		want        bool
	}{
		{"events", "events-v2/global-pane-0-shard-00000-of-00001-file-00000.txt", false},
		{"events", "events/global-pane-0-shard-00000-of-00001-file-00000", true},
		{"events", "events/global-pane-0-shard-00000-of-00001-file-00000.txt", true},
		{"events", "events/a/../global-pane-0-shard-00000-of-00001-file-00000.txt", false},
		{"events", "events//global-pane-0-shard-00000-of-00001-file-00000.txt", false},
		{"events", "events/global-pane-0-shard-0000-of-00001-file-00000.txt", false},
		{"events", "events/global-pane--shard-00000-of-00001-file-00000.txt", false},
		{"events", "events/global-pane-0-shard-00000-of-00001-batch-1-of-02-file-00000.txt", false},
		{"events", "events/global-pane-0-shard-00000-of-00001-file-00000.txt.bak~", false},
		{"events", "events/global-pane-0-shard-00000-of-00001-file-00000txt", false},
		{"events", "events/local-pane-0-shard-00000-of-00001-file-00000.txt", false},
		{"events", "events/2024-pane-0-shard-00000-of-00001-file-00000.txt", false},
		{"warehouse", "warehouse/orders.parquet", false},
		{"", "global-pane-0-shard-00000-of-00001-file-00000.txt", true},
		{"events", "events/_s3once_preflight/20240101T000000Z-0a0b0c0d0e0f", false},
	} {
		if got := IsFileName(c.prefix, c.key); got != c.want {
			t.Errorf("IsFileName(%q, %q) = %v, want %v", c.prefix, c.key, got, c.want)
		}
	}
}

func TestProbes(t *testing.T) {
	const id = "20240101T000000Z-0a0b0c0d0e0f"
	keys := []struct {
		key      string
		out, stg bool
	}{
		{PreflightOutputKey("events", id), true, false},
		{PreflightSideKey(staging, id), false, true},
		{PreflightCompleteKey(".s3once/staging", id), false, true},
		{ConditionalProbeKey(staging, "0123456789abcdef"), false, true},
		{ClockProbeKey(staging, "0123456789abcdef"), false, true},
		{"events/_s3once_preflight/" + id + "/x", false, false},
		{"events/_s3once_preflight/", false, false},
		{".s3once/staging/preflight/" + id + "/other", false, false},
		{".s3once/staging/preflight/" + id, false, false},
		{".s3once/staging/preflight-", false, false},
		{".s3once/staging/clock/a/b", false, false},
		{".s3once/staging/clock/a.b", false, false},
		{"warehouse/orders.parquet", false, false},
	}
	if got := PreflightOutputKey("events", id); got != "events/_s3once_preflight/"+id {
		t.Errorf("PreflightOutputKey = %q", got)
	}
	if got := PreflightCompleteKey(staging, id); got != ".s3once/staging/preflight/"+id+"/complete" {
		t.Errorf("PreflightCompleteKey = %q", got)
	}
	for _, k := range keys {
		if got := IsOutputProbe("events", k.key); got != k.out {
			t.Errorf("IsOutputProbe(%q) = %v, want %v", k.key, got, k.out)
		}
		if got := IsStagingProbe(staging, k.key); got != k.stg {
			t.Errorf("IsStagingProbe(%q) = %v, want %v", k.key, got, k.stg)
		}
		if got := IsProbe("events", staging, k.key); got != (k.out || k.stg) {
			t.Errorf("IsProbe(%q) = %v", k.key, got)
		}
		if IsSideObject(staging, k.key) || IsFileName("events", k.key) {
			t.Errorf("probe key %q also passes for a side object or a file", k.key)
		}
	}
}

func TestCheckStagingApart(t *testing.T) {
	for _, c := range []struct {
		prefix, staging string
		ok              bool
	}{
		{"events", ".s3once/staging/", true},
		{"events", "events/.s3once/staging/", true},
		{"events", "events/_tmp", true},
		{"events", "events/a/_tmp/", true},
		{"events", "events-staging/", true},
		{"", ".s3once/staging/", true},
		{"events", "events", false},
		{"events", "events/", false},
		{"events/", "events", false},
		{"events/x", "events", false},
		{"events", "events/tmp/", false},
		{"", "tmp/", false},
		{"events", "", false},
	} {
		err := CheckStagingApart(c.prefix, c.staging)
		if (err == nil) != c.ok {
			t.Errorf("CheckStagingApart(%q, %q) = %v, want ok=%v", c.prefix, c.staging, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrStagingOverlap) {
			t.Errorf("CheckStagingApart(%q, %q) = %v, not ErrStagingOverlap", c.prefix, c.staging, err)
		}
	}
}

// FuzzKeys: whatever the inputs, builders and predicates agree, and no
// predicate accepts a key outside its folder.
func FuzzKeys(f *testing.F) {
	f.Add(".s3once/staging/", "2~abc", uint64(4), "0a1b2c3d", "events", "country=fr", "global", ".jsonl", "warehouse/orders.parquet")
	f.Add("reports", "2024", uint64(1), "", "", "", "20240601T100000Z-20240601T110000Z", "", "reports/2024/x")
	f.Add("a", "..", uint64(0), "n", "a", "..", "x", "txt", "a/../00000000000000000000")
	f.Fuzz(func(t *testing.T, stg, upload string, seq uint64, nonce, prefix, dest, window, ext, key string) {
		side := SideObjectKey(stg, upload, seq, nonce)
		wantSide := EscapeUploadID(upload) != "." && EscapeUploadID(upload) != ".." && upload != "" && (nonce == "" || IsSideObjectName("00000000000000000000-"+nonce))
		if got := IsSideObjectOf(stg, upload, side); got != wantSide {
			t.Fatalf("IsSideObjectOf(%q, %q, %q) = %v, want %v", stg, upload, side, got, wantSide)
		}
		if wantSide && !IsSideObject(stg, side) {
			t.Fatalf("IsSideObject(%q, %q) = false for its own key", stg, side)
		}
		for _, k := range []string{key, side} {
			if (IsSideObject(stg, k) || IsStagingProbe(stg, k)) && !Under(stg, k) {
				t.Fatalf("%q passes for s3once's under %q but lies outside it", k, stg)
			}
			if (IsFileName(prefix, k) || IsOutputProbe(prefix, k)) && !Under(prefix, k) {
				t.Fatalf("%q passes for s3once's under %q but lies outside it", k, prefix)
			}
			if IsSideObjectOf(stg, upload, k) && !strings.HasPrefix(k, SideObjectPrefix(stg, upload)) {
				t.Fatalf("%q passes for a side object of %q outside its prefix", k, upload)
			}
		}
		if strings.Contains(EscapeUploadID(upload), "/") {
			t.Fatalf("escaped upload ID %q holds a slash", EscapeUploadID(upload))
		}
		file := FileKey(prefix, dest, FileName{Window: window, Shard: int(seq % 10000), Shards: 10000, File: int(seq % 7), Ext: ext})
		if IsFileName(prefix, file) && !Under(prefix, file) {
			t.Fatalf("file %q outside %q", file, prefix)
		}
		if isWindow(window) && isExt(ext) && validDest(dest) && !IsFileName(prefix, file) {
			t.Fatalf("IsFileName(%q, %q) = false for a key FileKey made", prefix, file)
		}
		if err := CheckStagingApart(prefix, stg); err == nil && Overlap(prefix, stg) {
			st := Folder(stg)
			below := st[len(Folder(prefix)):]
			if !strings.HasPrefix(below, ".") && !strings.HasPrefix(below, "_") && !strings.Contains(below, "/.") && !strings.Contains(below, "/_") {
				t.Fatalf("CheckStagingApart(%q, %q) accepts an overlap without a hidden segment", prefix, stg)
			}
		}
	})
}

func validDest(d string) bool {
	if d == "" {
		return true
	}
	for _, s := range strings.Split(d, "/") {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}
