package sink

import (
	"path"
	"strings"
)

// freshPrefix is the advice to write a changed run elsewhere: a fresh
// Prefix. A Prefix with the shape of an Iceberg table's run folder
// (<table location>/data/<run id>, as icebergtable's RunFolder and Write
// make it) was picked by the table stage from the run id, and its user
// changes the run id, not the Prefix: the advice then says that first.
func freshPrefix(prefix string) string {
	if isTableRunFolder(prefix) {
		return "give this run a new run id (the Prefix " + prefix + " has the shape of an Iceberg table's run folder, <table location>/data/<run id>; for a folder of plain files, write to a fresh Prefix)"
	}
	return "write to a fresh Prefix"
}

// isTableRunFolder reports whether prefix ends in data/<run id>.
func isTableRunFolder(prefix string) bool {
	dir, run := path.Split(strings.Trim(prefix, "/"))
	return run != "" && path.Base(dir) == "data"
}
