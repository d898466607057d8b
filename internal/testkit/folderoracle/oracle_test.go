package folderoracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/minio/crc64nvme"
)

func gz(t *testing.T, lines ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func obj(b []byte) Object { return Object{Size: int64(len(b)), Body: b} }

// folder: two files of letter=a (3 records) and their manifest.
func folder(t *testing.T) *Snapshot {
	f0 := gz(t, "a1", "a2")
	f1 := gz(t, "a3")
	k0 := "letter=a/global-pane-0-shard-00000-of-00001-file-00000.txt.gz"
	k1 := "letter=a/global-pane-0-shard-00000-of-00001-file-00001.txt.gz"
	var m bytes.Buffer
	for _, e := range []Entry{
		{Key: "out/" + k0, Size: int64(len(f0)), CRC64NVME: fmt.Sprintf("%016x", crc64nvme.Checksum(f0)), Records: 2},
		{Key: "out/" + k1, Size: int64(len(f1)), CRC64NVME: fmt.Sprintf("%016x", crc64nvme.Checksum(f1)), Records: 1},
	} {
		j, _ := json.Marshal(e)
		m.Write(j)
		m.WriteByte('\n')
	}
	return &Snapshot{Objects: map[string]Object{
		k0: obj(f0), k1: obj(f1),
		"letter=a/_s3once_manifest-global": obj(m.Bytes()),
		SettingsMarker:                     obj([]byte("s3once-settings 1\nformat=text\n")),
	}}
}

func expect() Expect {
	return Expect{
		Candidates: map[string][]Candidate{"letter=a": {{Run: "run1", Ext: ".txt.gz", Records: []string{"a3", "a1", "a2"}}}},
		Manifests:  true,
		Settings:   []byte("s3once-settings 1\nformat=text\n"),
	}
}

// TestJudge: the right folder is right; each kind of damage the scenario
// test makes is found, as wrong or as unfinished.
func TestJudge(t *testing.T) {
	if v := Judge(folder(t), expect()); !v.Right() || v.Owner["letter=a@global"] != "run1" || v.Files != 2 {
		t.Fatalf("the right folder: %s, owners %v", v, v.Owner)
	}
	k0 := "letter=a/global-pane-0-shard-00000-of-00001-file-00000.txt.gz"
	k1 := "letter=a/global-pane-0-shard-00000-of-00001-file-00001.txt.gz"
	for _, tc := range []struct {
		name       string
		edit       func(s *Snapshot)
		incomplete bool
		says       string
	}{
		{"file copied to the next index", func(s *Snapshot) {
			s.Objects["letter=a/global-pane-0-shard-00000-of-00001-file-00002.txt.gz"] = s.Objects[k1]
		}, false, "no run wrote exactly these"},
		{"file deleted", func(s *Snapshot) { delete(s.Objects, k1) }, false, "no run wrote exactly these"},
		{"file of another extension", func(s *Snapshot) {
			s.Objects["letter=a/global-pane-0-shard-00000-of-00001-file-00000.txt"] = obj([]byte("a1\n"))
		}, false, "extensions"},
		{"same-size bytes", func(s *Snapshot) {
			b := bytes.Clone(s.Objects[k0].Body)
			b[len(b)-5] ^= 1
			s.Objects[k0] = obj(b)
		}, false, ""},
		{"manifest deleted", func(s *Snapshot) { delete(s.Objects, "letter=a/_s3once_manifest-global") }, true, "no manifest"},
		{"manifest's record counts edited", func(s *Snapshot) {
			m := s.Objects["letter=a/_s3once_manifest-global"].Body
			s.Objects["letter=a/_s3once_manifest-global"] = obj(bytes.ReplaceAll(m, []byte(`"records":`), []byte(`"records":1000`)))
		}, false, "records"},
		{"manifest cut", func(s *Snapshot) {
			m := s.Objects["letter=a/_s3once_manifest-global"].Body
			s.Objects["letter=a/_s3once_manifest-global"] = obj(m[:bytes.IndexByte(m, '\n')+1])
		}, false, "does not list"},
		{"marker cut", func(s *Snapshot) { s.Objects[SettingsMarker] = obj([]byte("s3once-settings 1\n")) }, false, "settings marker differs"},
		{"an open upload", func(s *Snapshot) { s.Uploads = append(s.Uploads, k0) }, true, "open upload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := folder(t)
			tc.edit(s)
			v := Judge(s, expect())
			if v.Right() {
				t.Fatal("found right")
			}
			if v.Wrong() == tc.incomplete {
				t.Errorf("wrong=%v, want %v: %s", v.Wrong(), !tc.incomplete, v)
			}
			if !strings.Contains(v.String(), tc.says) {
				t.Errorf("the verdict does not say %q: %s", tc.says, v)
			}
		})
	}
	// A partition with part of a run's records and no manifest is
	// unfinished, not wrong.
	s := folder(t)
	delete(s.Objects, k1)
	delete(s.Objects, "letter=a/_s3once_manifest-global")
	if v := Judge(s, expect()); v.Right() || v.Wrong() {
		t.Errorf("a partial partition: %s", v)
	}
}

// TestParse: the oracle's own parsers take the documented shapes and
// refuse others.
func TestParse(t *testing.T) {
	f, ok := ParseFile("d=1/x/20240601T100000Z-20240601T110000Z-pane-2-shard-00003-of-00004-batch-01-of-02-file-00005.jsonl.zst")
	if !ok || f.Destination != "d=1/x" || f.Pane != 2 || f.Shard != 3 || f.Shards != 4 || f.Batch != 1 || f.Batches != 2 || f.Index != 5 || f.Ext != ".jsonl.zst" {
		t.Errorf("parsed %+v, %v", f, ok)
	}
	for _, bad := range []string{"global-pane-0-shard-0-of-1-file-0.txt", "a//global-pane-0-shard-00000-of-00001-file-00000.txt", "global-pane-01-shard-00000-of-00001-file-00000.txt", "_s3once_settings"} {
		if _, ok := ParseFile(bad); ok {
			t.Errorf("%q parsed as a file", bad)
		}
	}
	if d, w, ok := ParseManifest("letter=a/_s3once_manifest-global"); !ok || d != "letter=a" || w != "global" {
		t.Errorf("manifest: %q %q %v", d, w, ok)
	}
	if recs, err := Records(".jsonl", []byte("\"a\"\n\"b\"\n")); err != nil || strings.Join(recs, ",") != "a,b" {
		t.Errorf("jsonl: %v %v", recs, err)
	}
	if _, err := Records(".txt", []byte("a\nb")); err == nil {
		t.Error("a file without its last newline was read")
	}
}
