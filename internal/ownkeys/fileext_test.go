package ownkeys

import "testing"

func TestFileNamesExt(t *testing.T) {
	const tmpl = "<destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF>"
	for _, c := range []struct {
		names, ext string
		ok         bool
	}{
		{tmpl + ".jsonl.gz", ".jsonl.gz", true},
		{tmpl + ".parquet", ".parquet", true},
		{tmpl, "", true},
		{"<window>-file-<NNNNN>.jsonl", "", false},
		{"", "", false},
		{tmpl + "/x", "", false},
	} {
		ext, ok := FileNamesExt(c.names)
		if ok != c.ok || (ok && ext != c.ext) {
			t.Errorf("FileNamesExt(%q) = %q, %v; want %q, %v", c.names, ext, ok, c.ext, c.ok)
		}
	}
}

func TestHasFileExt(t *testing.T) {
	for _, c := range []struct {
		key, ext string
		want     bool
	}{
		{"p/global-pane-0-shard-00000-of-00001-file-00099.jsonl.gz", ".jsonl.gz", true},
		{"p/global-pane-0-shard-00000-of-00001-file-00099.jsonl.gz.other", ".jsonl.gz", false},
		{"p/global-pane-0-shard-00000-of-00001-file-00099.jsonl", ".jsonl.gz", false},
		{"p/global-pane-0-shard-00000-of-00001-file-00099.x.jsonl.gz", ".jsonl.gz", false},
		{"p/global-pane-0-shard-00000-of-00001-file-00099", "", true},
		{".jsonl.gz", ".jsonl.gz", false},
	} {
		if got := HasFileExt(c.key, c.ext); got != c.want {
			t.Errorf("HasFileExt(%q, %q) = %v, want %v", c.key, c.ext, got, c.want)
		}
	}
}
