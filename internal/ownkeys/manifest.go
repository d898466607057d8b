package ownkeys

import "strings"

// ManifestName is the base name of a partition manifest. It starts with
// '_', so Spark, Hive, Trino, Athena and DuckDB's globs skip it, as they
// skip _SUCCESS.
const ManifestName = "_s3once_manifest"

// ManifestKey is the key of the manifest of one partition, the files of one
// destination and window under the output folder prefix:
//
//	<prefix folder>[<destination>/]_s3once_manifest-<window>
//
// window is the window's name as file names carry it ("global", or its
// bounds). A manifest is written once (If-None-Match), after every file of
// its partition is committed, and never deleted, swept or overwritten by
// s3once.
func ManifestKey(prefix, destination, window string) string {
	return PartitionFolder(prefix, destination) + ManifestName + "-" + window
}

// PartitionFolder is the folder that holds a destination's files:
// <prefix folder><destination>/, or the prefix folder itself for the
// destination "".
func PartitionFolder(prefix, destination string) string {
	if destination == "" {
		return Folder(prefix)
	}
	return Folder(prefix) + destination + "/"
}

// PartitionFilePrefix is what every file of one partition's key starts
// with: <partition folder><window>-pane-. A listing with it finds the
// partition's files (and only its own: the window's name is followed by
// "-pane-", and a nested destination's files lie one segment deeper, which
// IsPartitionFile refuses).
func PartitionFilePrefix(prefix, destination, window string) string {
	return PartitionFolder(prefix, destination) + window + "-pane-"
}

// IsPartitionFile reports whether key is an s3once file name of the
// partition (destination, window) under the output folder prefix.
func IsPartitionFile(prefix, destination, window, key string) bool {
	p := PartitionFilePrefix(prefix, destination, window)
	if !strings.HasPrefix(key, p) || strings.IndexByte(key[len(p):], '/') >= 0 {
		return false
	}
	return IsFileName(prefix, key)
}

// IsManifest reports whether key is a partition manifest under the output
// folder prefix, of any destination: its last segment is
// "_s3once_manifest-<window>", and the segments between the folder and it
// are destination segments.
func IsManifest(prefix, key string) bool {
	_, _, ok := ParseManifestKey(prefix, key)
	return ok
}

// ParseManifestKey splits a manifest's key into its destination and window
// (ManifestKey's inverse).
func ParseManifestKey(prefix, key string) (destination, window string, ok bool) {
	if !Under(prefix, key) {
		return "", "", false
	}
	rest := key[len(Folder(prefix)):]
	name := rest
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		destination, name = rest[:i], rest[i+1:]
		for _, seg := range strings.Split(destination, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "", "", false
			}
		}
	}
	w, found := strings.CutPrefix(name, ManifestName+"-")
	if !found || !isWindow(w) {
		return "", "", false
	}
	return destination, w, true
}

// ParseFileKey splits an s3once file's key into its destination and window
// (the partition it belongs to).
func ParseFileKey(prefix, key string) (destination, window string, ok bool) {
	if !IsFileName(prefix, key) {
		return "", "", false
	}
	rest := key[len(Folder(prefix)):]
	name := rest
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		destination, name = rest[:i], rest[i+1:]
	}
	w, _, _ := strings.Cut(name, "-pane-")
	return destination, w, true
}

// IsManifestAnywhere reports whether key is a partition manifest of some
// folder: its last segment is "_s3once_manifest-<window>". Readers that
// list output files across folders skip such keys, as they skip the
// settings marker (IsSettingsAnywhere).
func IsManifestAnywhere(key string) bool {
	w, ok := strings.CutPrefix(key[strings.LastIndexByte(key, '/')+1:], ManifestName+"-")
	return ok && isWindow(w)
}
