package icebergtable

import (
	"errors"
	"maps"
	"net"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sqliteBusyTimeoutMS is how long a connection to a SQLite catalog waits
// for another process's lock before it reports SQLITE_BUSY, unless the
// catalog's uri sets busy_timeout itself.
const sqliteBusyTimeoutMS = "15000"

// sqliteDefaults returns props with the settings that let several programs
// share one SQL catalog over SQLite added to its uri, where the uri does
// not set them:
//
//   - _pragma=busy_timeout(15000): a connection waits for another
//     program's lock instead of failing at once with SQLITE_BUSY;
//   - _pragma=journal_mode(WAL): readers never block a writer, so a
//     program paused or slow while it reads the catalog (loading a table)
//     holds up no other program's commit. WAL is a property of the
//     database file: it stays on for every program that opens it, all of
//     which must run on one machine (WAL needs shared memory, so not over
//     a network file system).
//
// A writer still holds the one write lock for the few milliseconds of its
// commit's update; a program stopped inside them (SIGSTOP, a debugger)
// blocks every other writer until it resumes or dies, and they then fail
// with SQLITE_BUSY after the busy timeout and their commit rounds.
// Other catalogs' properties are returned unchanged.
func sqliteDefaults(props map[string]string) map[string]string {
	if props["type"] != "sql" || (props["sql.dialect"] != "sqlite" && props["sql.driver"] != "sqlite") {
		return props
	}
	uri := props["uri"]
	if uri == "" {
		return props
	}
	var add []string
	lower := strings.ToLower(uri)
	if !strings.Contains(lower, "busy_timeout") {
		add = append(add, "_pragma=busy_timeout("+sqliteBusyTimeoutMS+")")
	}
	if !strings.Contains(lower, "journal_mode") && !strings.Contains(lower, ":memory:") && !strings.Contains(lower, "mode=memory") {
		add = append(add, "_pragma=journal_mode(WAL)")
	}
	if len(add) == 0 {
		return props
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	out := maps.Clone(props)
	out["uri"] = uri + sep + strings.Join(add, "&")
	return out
}

// transient reports whether a failed catalog commit may succeed when
// tried again: the catalog's database was locked by another program, the
// connection failed or timed out, or the catalog or the object store
// answered with a server error. Such a commit may also have been applied
// before the error came back; the next round's look-up of the run id
// finds it then and adds nothing.
func transient(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "SQLITE_LOCKED") || strings.Contains(msg, "database is locked") {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultServer {
		return true
	}
	return strings.Contains(msg, "connection reset") || strings.Contains(msg, "unexpected EOF")
}
