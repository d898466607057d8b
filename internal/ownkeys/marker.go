package ownkeys

import "strings"

// MarkerName is the base name of a completion marker: readers of Spark and
// Hive look for "_SUCCESS".
const MarkerName = "_SUCCESS"

// MarkerKey is the key of the completion marker of one window's pane under
// the output folder prefix:
//
//	<prefix folder>_SUCCESS                               the global window, pane 0 (a bounded run)
//	<prefix folder>_SUCCESS-<window>[-pane-<n>]           any other window, or a later pane
//
// window is the window's name as file names carry it ("global", or its
// bounds). A marker is written once and never deleted by s3once.
func MarkerKey(prefix, window string, pane int64) string {
	k := Folder(prefix) + MarkerName
	if window != "global" {
		k += "-" + window
	}
	if pane > 0 {
		k += "-pane-" + pad(pane, 1)
	}
	return k
}

// IsMarker reports whether key is a completion marker under the output
// folder prefix.
func IsMarker(prefix, key string) bool {
	f := Folder(prefix)
	if !strings.HasPrefix(key, f) {
		return false
	}
	rest, ok := strings.CutPrefix(key[len(f):], MarkerName)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	rest, ok = strings.CutPrefix(rest, "-")
	if !ok {
		return false
	}
	if p, ok := strings.CutPrefix(rest, "pane-"); ok {
		return allDigits(p) && p[0] != '0' // the global window, a later pane
	}
	// A window's name never holds "-pane-" (digits, 'T', 'Z', '.', '-').
	w, pane, hasPane := strings.Cut(rest, "-pane-")
	if w == "global" || !isWindow(w) {
		return false
	}
	return !hasPane || allDigits(pane) && pane[0] != '0'
}
