package ownkeys

import "testing"

func TestMarkerKeys(t *testing.T) {
	w := "20240601T000000Z-20240601T010000Z"
	for _, tc := range []struct {
		window string
		pane   int64
		want   string
	}{
		{"global", 0, "out/_SUCCESS"},
		{"global", 2, "out/_SUCCESS-pane-2"},
		{w, 0, "out/_SUCCESS-" + w},
		{w, 1, "out/_SUCCESS-" + w + "-pane-1"},
	} {
		k := MarkerKey("out", tc.window, tc.pane)
		if k != tc.want {
			t.Errorf("MarkerKey(%s, %d) = %s, want %s", tc.window, tc.pane, k, tc.want)
		}
		if !IsMarker("out", k) || !IsMarker("out/", k) {
			t.Errorf("IsMarker(%s) = false", k)
		}
		if IsMarker("other", k) {
			t.Errorf("%s counted as a marker of another prefix", k)
		}
	}
	for _, k := range []string{"out/_SUCCESS-global", "out/_SUCCESS-pane-0", "out/_SUCCESS-pane-", "out/_SUCCESSX",
		"out/_SUCCESS-" + w + "-pane-01", "out/_SUCCESS-2024", "out/x/_SUCCESS", "_SUCCESS"} {
		if IsMarker("out", k) {
			t.Errorf("IsMarker(%q) = true", k)
		}
	}
	if MarkerKey("", "global", 0) != "_SUCCESS" || !IsMarker("", "_SUCCESS") {
		t.Errorf("bucket-root marker")
	}
	// A marker is none of s3once's other keys: never a file, a probe or a
	// staging key, so neither the commit stage nor the sweep takes it.
	k := MarkerKey("out", w, 0)
	if IsFileName("out", k) || IsProbe("out", ".s3once/staging/", k) || IsOwnStaging("out/.s3once/staging/", k) {
		t.Errorf("%s is taken for another kind of key", k)
	}
}
