package ownkeys

import (
	"strings"
	"testing"
)

const (
	hourWindow = "20240601T100000Z-20240601T110000Z"
	msWindow   = "20240601T100000.250Z-20240601T100000.500Z"
)

func TestPartitionKeys(t *testing.T) {
	for _, c := range []struct{ prefix, dest, window, manifest, folder, files string }{
		{"events", "day=1", "global", "events/day=1/_s3once_manifest-global", "events/day=1/", "events/day=1/global-pane-"},
		{"events/", "", "global", "events/_s3once_manifest-global", "events/", "events/global-pane-"},
		{"", "", hourWindow, "_s3once_manifest-" + hourWindow, "", hourWindow + "-pane-"},
		{"a/b", "c/d", msWindow, "a/b/c/d/_s3once_manifest-" + msWindow, "a/b/c/d/", "a/b/c/d/" + msWindow + "-pane-"},
	} {
		if got := ManifestKey(c.prefix, c.dest, c.window); got != c.manifest {
			t.Errorf("ManifestKey(%q, %q, %q) = %q, want %q", c.prefix, c.dest, c.window, got, c.manifest)
		}
		if got := PartitionFolder(c.prefix, c.dest); got != c.folder {
			t.Errorf("PartitionFolder(%q, %q) = %q, want %q", c.prefix, c.dest, got, c.folder)
		}
		if got := PartitionFilePrefix(c.prefix, c.dest, c.window); got != c.files {
			t.Errorf("PartitionFilePrefix(%q, %q, %q) = %q, want %q", c.prefix, c.dest, c.window, got, c.files)
		}
	}
}

func TestParseManifestKey(t *testing.T) {
	for _, c := range []struct {
		prefix, key    string
		dest, window   string
		ok, isManifest bool
	}{
		{"events", "events/day=1/_s3once_manifest-global", "day=1", "global", true, true},
		{"events/", "events/_s3once_manifest-global", "", "global", true, true},
		{"events", "events/a/b/_s3once_manifest-" + hourWindow, "a/b", hourWindow, true, true},
		{"", "_s3once_manifest-" + msWindow, "", msWindow, true, true},
		{"", "x/_s3once_manifest-global", "x", "global", true, true},
		// A destination may itself be named like a manifest: the last
		// segment decides.
		{"p", "p/_s3once_manifest-global/_s3once_manifest-global", "_s3once_manifest-global", "global", true, true},
		{"events", "_s3once_manifest-global", "", "", false, false},                  // outside the folder
		{"events", "events-v2/_s3once_manifest-global", "", "", false, false},        // a sibling folder
		{"events", "events/day=1/_s3once_manifest-", "", "", false, false},           // no window
		{"events", "events/day=1/_s3once_manifest", "", "", false, false},            // no window
		{"events", "events/day=1/_s3once_manifest_global", "", "", false, false},     // not the separator
		{"events", "events/day=1/_s3once_manifest-global.tmp", "", "", false, false}, // something after
		{"events", "events/day=1/_s3once_manifest-2024-2025", "", "", false, false},  // not a window
		{"events", "events/_s3once_manifest-global/x", "", "", false, false},         // a folder of that name
		{"events", "events//_s3once_manifest-global", "", "", false, false},          // an empty segment
		{"events", "events/./_s3once_manifest-global", "", "", false, false},
		{"events", "events/a/../_s3once_manifest-global", "", "", false, false},
		{"events", "events/day=1/global-pane-0-shard-00000-of-00004-file-00000.jsonl", "", "", false, false}, // a file
		{"events", "events/_s3once_settings", "", "", false, false},
		{"events", "events/_SUCCESS-" + hourWindow, "", "", false, false},
	} {
		d, w, ok := ParseManifestKey(c.prefix, c.key)
		if d != c.dest || w != c.window || ok != c.ok {
			t.Errorf("ParseManifestKey(%q, %q) = %q, %q, %v; want %q, %q, %v", c.prefix, c.key, d, w, ok, c.dest, c.window, c.ok)
		}
		if got := IsManifest(c.prefix, c.key); got != c.isManifest {
			t.Errorf("IsManifest(%q, %q) = %v", c.prefix, c.key, got)
		}
		if ok && ManifestKey(c.prefix, d, w) != c.key {
			t.Errorf("ManifestKey(%q, %q, %q) = %q, not the key parsed", c.prefix, d, w, ManifestKey(c.prefix, d, w))
		}
	}
}

func TestParseFileKey(t *testing.T) {
	name := "-pane-0-shard-00001-of-00004-file-00000.jsonl.gz"
	for _, c := range []struct {
		prefix, key  string
		dest, window string
		ok           bool
	}{
		{"events", "events/day=1/global" + name, "day=1", "global", true},
		{"events", "events/global" + name, "", "global", true},
		{"events", "events/a/b/" + hourWindow + name, "a/b", hourWindow, true},
		{"", msWindow + name, "", msWindow, true},
		{"events", "events/day=1/global-pane-3-shard-00001-of-00004-batch-01-of-02-file-00009", "day=1", "global", true},
		// The shape alone: an extension s3once does not write still parses
		// (which files are this folder's is the settings marker's to say).
		{"events", "events/day=1/global" + name + ".other", "day=1", "global", true},
		{"events", "global" + name, "", "", false},              // outside the folder
		{"events", "events-v2/global" + name, "", "", false},    // a sibling folder
		{"events", "events//global" + name, "", "", false},      // an empty segment
		{"events", "events/../global" + name, "", "", false},    // a step up
		{"events", "events/day=1/2024" + name, "", "", false},   // not a window
		{"events", "events/day=1/global-pane-x", "", "", false}, // not a file name
		{"events", "events/day=1/global" + name + "/", "", "", false},
		{"events", "events/day=1/_s3once_manifest-global", "", "", false},
		{"events", "events/_SUCCESS", "", "", false},
	} {
		d, w, ok := ParseFileKey(c.prefix, c.key)
		if d != c.dest || w != c.window || ok != c.ok {
			t.Errorf("ParseFileKey(%q, %q) = %q, %q, %v; want %q, %q, %v", c.prefix, c.key, d, w, ok, c.dest, c.window, c.ok)
		}
	}
}

func TestIsPartitionFile(t *testing.T) {
	name := "-pane-0-shard-00001-of-00004-file-00000.jsonl"
	for _, c := range []struct {
		dest, window, key string
		want              bool
	}{
		{"day=1", "global", "out/day=1/global" + name, true},
		{"", "global", "out/global" + name, true},
		{"day=1", hourWindow, "out/day=1/" + hourWindow + "-pane-7-shard-00001-of-00004-batch-00-of-03-file-00002.jsonl", true},
		{"day=1", "global", "out/day=1/" + hourWindow + name, false},        // another window
		{"day=1", "global", "out/day=2/global" + name, false},               // another destination
		{"day=1", "global", "out/day=1/sub/global" + name, false},           // a nested destination's file
		{"", "global", "out/day=1/global" + name, false},                    // a destination's file, not the root's
		{"day=1", "global", "out/day=1/_s3once_manifest-global", false},     // the manifest
		{"day=1", "global", "out/day=1/global-pane-0-shard-1.jsonl", false}, // not a file name
		{"day=1", "global", "out2/day=1/global" + name, false},              // another folder
	} {
		if got := IsPartitionFile("out", c.dest, c.window, c.key); got != c.want {
			t.Errorf("IsPartitionFile(out, %q, %q, %q) = %v, want %v", c.dest, c.window, c.key, got, c.want)
		}
	}
}

// FuzzPartitionKeys: a key is never both a manifest and a file (nor a
// marker and a manifest); ManifestKey and FileKey round-trip through
// ParseManifestKey and ParseFileKey for every valid destination and window;
// a parsed file belongs, by IsPartitionFile, to the partition parsed, and
// only to it; and a parsed key is rebuilt from what was parsed.
func FuzzPartitionKeys(f *testing.F) {
	f.Add("events", "day=1", "global", ".jsonl.gz", "events/day=1/_s3once_manifest-global", uint16(3), uint16(1))
	f.Add("", "", hourWindow, "", "global-pane-0-shard-00000-of-00001-file-00000", uint16(0), uint16(0))
	f.Add("a/", "b/c", msWindow, ".x", "a/b/c/"+msWindow+"-pane-1-shard-00000-of-00002-batch-01-of-02-file-00003.x.other", uint16(9), uint16(2))
	f.Add("p", "_s3once_manifest-global", "global", ".txt", "p/_s3once_manifest-global/_s3once_manifest-global", uint16(1), uint16(1))
	f.Add("p", "..", "global", "", "p/../_s3once_manifest-global", uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, prefix, dest, window, ext, key string, shard, batches uint16) {
		for _, k := range []string{key, ManifestKey(prefix, dest, window)} {
			fileD, fileW, isFile := ParseFileKey(prefix, k)
			manD, manW, isMan := ParseManifestKey(prefix, k)
			if isFile && isMan {
				t.Fatalf("%q under %q is both a file and a manifest", k, prefix)
			}
			if isMan && (IsMarker(prefix, k) || IsSettings(prefix, k) || IsOutputProbe(prefix, k)) {
				t.Fatalf("%q under %q is both a manifest and another of s3once's objects", k, prefix)
			}
			if isMan != IsManifest(prefix, k) {
				t.Fatalf("IsManifest(%q, %q) disagrees with ParseManifestKey", prefix, k)
			}
			if isMan {
				if !Under(prefix, k) || !validDest(manD) || !isWindow(manW) {
					t.Fatalf("ParseManifestKey(%q, %q) = %q, %q: not a partition of the folder", prefix, k, manD, manW)
				}
				if got := ManifestKey(prefix, manD, manW); got != k {
					t.Fatalf("ParseManifestKey(%q, %q) = %q, %q, whose manifest is %q", prefix, k, manD, manW, got)
				}
			}
			if isFile != IsFileName(prefix, k) {
				t.Fatalf("IsFileName(%q, %q) disagrees with ParseFileKey", prefix, k)
			}
			if isFile {
				if !validDest(fileD) || !isWindow(fileW) {
					t.Fatalf("ParseFileKey(%q, %q) = %q, %q: not a partition", prefix, k, fileD, fileW)
				}
				if !IsPartitionFile(prefix, fileD, fileW, k) || !strings.HasPrefix(k, PartitionFilePrefix(prefix, fileD, fileW)) {
					t.Fatalf("ParseFileKey(%q, %q) = %q, %q, a partition that does not hold it", prefix, k, fileD, fileW)
				}
				d, w, ok := ParseManifestKey(prefix, ManifestKey(prefix, fileD, fileW))
				if !ok || d != fileD || w != fileW {
					t.Fatalf("the manifest of %q's partition parses as %q, %q, %v", k, d, w, ok)
				}
			}
			// IsPartitionFile takes a key only for the partition it parses
			// as (for a window s3once names).
			if isWindow(window) && IsPartitionFile(prefix, dest, window, k) && (!isFile || fileD != dest || fileW != window) {
				t.Fatalf("IsPartitionFile(%q, %q, %q, %q) = true, but the key parses as %q, %q, %v", prefix, dest, window, k, fileD, fileW, isFile)
			}
		}
		if !isWindow(window) || !validDest(dest) {
			return
		}
		m := ManifestKey(prefix, dest, window)
		if d, w, ok := ParseManifestKey(prefix, m); !ok || d != dest || w != window {
			t.Fatalf("ParseManifestKey(%q, %q) = %q, %q, %v; want %q, %q", prefix, m, d, w, ok, dest, window)
		}
		if !isExt(ext) {
			return
		}
		n := FileName{Window: window, Pane: int64(shard % 5), Shard: int(shard), Shards: int(shard) + 1, File: int(batches), Ext: ext}
		if batches > 1 {
			n.SubBatch, n.SubBatches = int(shard)%int(batches), int(batches)
		}
		file := FileKey(prefix, dest, n)
		if d, w, ok := ParseFileKey(prefix, file); !ok || d != dest || w != window {
			t.Fatalf("ParseFileKey(%q, %q) = %q, %q, %v; want %q, %q", prefix, file, d, w, ok, dest, window)
		}
		if !IsPartitionFile(prefix, dest, window, file) {
			t.Fatalf("IsPartitionFile(%q, %q, %q, %q) = false for a key FileKey made", prefix, dest, window, file)
		}
		if IsManifest(prefix, file) {
			t.Fatalf("FileKey made %q, which IsManifest takes", file)
		}
	})
}
