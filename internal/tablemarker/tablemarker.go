// Package tablemarker is the encoding of the table commit marker,
// <run folder>/_s3once_table_commit-<window>: the object the Iceberg table
// stage writes beside a run's data files once a snapshot of the table holds
// them. It names the table and the snapshot, so that a reader that links no
// Iceberg (s3once verify) can tell committed files of a run that reached
// the table from those of a run that did not.
package tablemarker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/s3once/s3once/internal/ownkeys"
)

// Name is the start of a marker's base name; the window follows. It starts
// with '_', so query engines skip it.
const Name = "_s3once_table_commit-"

// MaxBytes bounds a marker (and what is read of one).
const MaxBytes = 16 << 10

// Key is the marker of a run's window in the run's folder prefix.
func Key(prefix, window string) string { return ownkeys.Folder(prefix) + Name + window }

// IsKey reports whether key is a marker in the folder prefix, and of which
// window.
func IsKey(prefix, key string) (window string, ok bool) {
	rest, ok := strings.CutPrefix(key, ownkeys.Folder(prefix)+Name)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

// Marker is what a marker records.
type Marker struct {
	RunID  string `json:"run_id"`
	Window string `json:"window"`
	// Table is the table's identifier, dot-separated.
	Table      string `json:"table"`
	SnapshotID int64  `json:"snapshot_id"`
	// Files and FilesSHA256 are the run's file count and the digest of its
	// file list, as the snapshot's summary records them.
	Files       int    `json:"files"`
	FilesSHA256 string `json:"files_sha256"`
	// Version is the marker's format version, 1.
	Version int `json:"version"`
}

const version = 1

// ErrInvalid is wrapped by Decode's errors.
var ErrInvalid = errors.New("not a table commit marker of this s3once version")

// Encode writes a marker's bytes: one line of JSON, fields in a fixed
// order, the version set.
func Encode(m Marker) []byte {
	m.Version = version
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a struct of strings and numbers always marshals
	}
	return append(b, '\n')
}

// Decode reads a marker, refusing anything Encode would not have written.
func Decode(b []byte) (Marker, error) {
	if len(b) > MaxBytes {
		return Marker{}, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(b), MaxBytes)
	}
	var m Marker
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Marker{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if m.Version != version {
		return Marker{}, fmt.Errorf("%w: version %d (this s3once reads %d)", ErrInvalid, m.Version, version)
	}
	if m.RunID == "" || m.Window == "" || m.Table == "" || m.Files < 0 || len(m.FilesSHA256) != 64 {
		return Marker{}, fmt.Errorf("%w: a field is missing or out of range", ErrInvalid)
	}
	if !bytes.Equal(Encode(m), b) {
		return Marker{}, fmt.Errorf("%w: not in canonical form", ErrInvalid)
	}
	return m, nil
}
