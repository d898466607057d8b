// Package settingsmarker is the encoding of the settings marker,
// <prefix>/_s3once_settings (ownkeys.SettingsKey): the object that records
// the settings an output folder's files' bytes and names depend on. The
// sink writes and compares it; s3once verify reads it. Both judge a marker
// they read with Check, against the one table of required settings here.
package settingsmarker

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/ownkeys"
)

// Setting is one name and value of a marker.
type Setting struct{ Name, Value string }

// Settings is a marker's content: settings sorted by name, each once.
type Settings []Setting

// Get returns the value of the setting name, and whether the marker has it.
func (m Settings) Get(name string) (string, bool) {
	for _, s := range m {
		if s.Name == name {
			return s.Value, true
		}
	}
	return "", false
}

// The marker is canonical text, so that equal settings give equal bytes and
// an operator can read it:
//
//	s3once-settings 1\n
//	<name>=<value>\n        one line per setting, names strictly increasing
//
// A name is 1 to 64 bytes of [a-z0-9-]. A value is printable ASCII, with
// '%' and every byte outside 0x20-0x7E written as %XX (upper-case hex), and
// nothing else escaped. The first line's number is the marker's version: a
// reader refuses a version it does not know, and within version 1 takes
// names it does not know (a later build may record more settings). Decode
// takes any well-formed marker, however few its settings; Check, which
// every reader of a folder's marker applies after it, refuses one that
// lacks a setting every marker of its version holds (Required): a marker
// truncated at a line boundary, or reduced to its header line, is damaged,
// never a smaller set of settings to compare.
const (
	magic   = "s3once-settings "
	version = 1
	// MaxBytes bounds a marker (and what is read of one).
	MaxBytes = 64 << 10
	maxName  = 64
)

// ErrInvalid is wrapped by Decode's errors.
var ErrInvalid = errors.New("not a settings marker of this s3once version")

// Encode writes a marker's bytes.
func Encode(m Settings) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteString(strconv.Itoa(version))
	b.WriteByte('\n')
	for _, s := range m {
		b.WriteString(s.Name)
		b.WriteByte('=')
		for i := 0; i < len(s.Value); i++ {
			c := s.Value[i]
			if c < 0x20 || c > 0x7e || c == '%' {
				fmt.Fprintf(&b, "%%%02X", c)
				continue
			}
			b.WriteByte(c)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Decode reads a marker. It takes canonical encodings only, so
// that encoding what it returns gives b again.
func Decode(b []byte) (Settings, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, len(b), MaxBytes)
	}
	head, rest, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || !bytes.HasPrefix(head, []byte(magic)) {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrInvalid, magic)
	}
	vs := string(head[len(magic):])
	v, err := strconv.Atoi(vs)
	if err != nil || strconv.Itoa(v) != vs || v < 1 {
		return nil, fmt.Errorf("%w: version %q", ErrInvalid, vs)
	}
	if v != version {
		return nil, fmt.Errorf("%w: version %d, written by a later s3once; this build reads version %d", ErrInvalid, v, version)
	}
	var m Settings
	for len(rest) > 0 {
		var line []byte
		if line, rest, ok = bytes.Cut(rest, []byte{'\n'}); !ok {
			return nil, fmt.Errorf("%w: the last line has no end", ErrInvalid)
		}
		name, value, ok := bytes.Cut(line, []byte{'='})
		if !ok || !validName(name) {
			return nil, fmt.Errorf("%w: line %q is not name=value", ErrInvalid, line)
		}
		if len(m) > 0 && m[len(m)-1].Name >= string(name) {
			return nil, fmt.Errorf("%w: setting %q is out of order", ErrInvalid, name)
		}
		val, err := unescape(value)
		if err != nil {
			return nil, fmt.Errorf("%w: setting %q: %w", ErrInvalid, name, err)
		}
		m = append(m, Setting{string(name), val})
	}
	return m, nil
}

func validName(n []byte) bool {
	if len(n) == 0 || len(n) > maxName {
		return false
	}
	for _, c := range n {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// unescape undoes Encode's escapes, refusing any other
// form (a byte escaped that need not be, lower-case hex, a raw byte that
// must be escaped).
func unescape(v []byte) (string, error) {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '%':
			if i+2 >= len(v) {
				return "", errors.New("a cut escape")
			}
			hi, lo := strings.IndexByte(hex, v[i+1]), strings.IndexByte(hex, v[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("escape %q", v[i:i+3])
			}
			d := byte(hi<<4 | lo)
			if d >= 0x20 && d <= 0x7e && d != '%' {
				return "", fmt.Errorf("escape %q of a byte written as is", v[i:i+3])
			}
			b.WriteByte(d)
			i += 2
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("raw byte %#x", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ---- the settings a marker must hold ---------------------------------------

// required lists, in the marker's order, the settings every marker of
// version 1 holds, whatever its format and codec: the first release that
// wrote markers wrote each of these lines, and every later one does. A
// setting with no effect under the others is written as "" (the sync
// spacing and codec library without compression, the Parquet settings of
// other formats), so the lines are the same for every format and codec;
// what differs is which of them hold a value (valued).
var required = []string{
	"checkpoint-sync-bytes",
	"compression",
	"compression-library",
	"file-names",
	"format",
	"max-batch-bytes",
	"max-file-bytes",
	"max-file-records",
	"output-version",
	"parquet-compression",
	"parquet-library",
	"parquet-row-group-bytes",
	"parquet-row-group-records",
	"shards",
}

// optional lists the settings later releases added to version 1. A marker
// of an earlier release lacks them and is whole; a comparison skips a
// setting one side lacks. Any setting neither list names (one a later build
// records) is optional too.
var optional = []string{
	"compression-canary", // the codec's output digest
	"parquet-canary",     // the Parquet library's output digest
	"shard-target-bytes", // automatic sharding (TargetFileBytes)
}

// Optional returns the settings a version-1 marker may lack: the ones
// later releases added.
func Optional() []string { return slices.Clone(optional) }

// Requirement is one row of the table of Required: a setting a marker must
// hold, and whether it must hold a value ("" counts as held, not as a
// value).
type Requirement struct {
	Name  string
	Value bool
}

// Required is the table of the settings a version-1 marker of the given
// format and compression (the values of its own "format" and "compression"
// lines) must hold: every setting of required, for every pair. Which of
// them must hold a value depends on the pair, one axis each:
//
//	setting                     every pair
//	compression, file-names,    value
//	format, max-batch-bytes,
//	max-file-bytes,
//	max-file-records,
//	output-version, shards
//
//	setting                     compression "none"   compressed (gzip, zstd,
//	                            (and every parquet)  a program's codec)
//	checkpoint-sync-bytes       ""                   value
//	compression-library         ""                   value
//
//	setting                     format "parquet"     text, jsonl, csv, a
//	                                                 program's format
//	parquet-compression,        value                "" (held, not checked)
//	parquet-library,
//	parquet-row-group-bytes,
//	parquet-row-group-records
//
// "" is what s3once writes there; it is held but not checked (a value
// there is a change the sink's comparison finds; a program may register
// the Parquet format under another name, whose marker holds values). The
// settings of Optional may be missing from any pair.
func Required(format, compression string) []Requirement {
	rows := make([]Requirement, 0, len(required))
	for _, name := range required {
		value := true
		switch name {
		case "checkpoint-sync-bytes", "compression-library":
			// An empty compression is damage of its own, not a codec.
			value = compression != "none" && compression != ""
		case "parquet-compression", "parquet-library", "parquet-row-group-bytes", "parquet-row-group-records":
			value = format == "parquet"
		}
		rows = append(rows, Requirement{Name: name, Value: value})
	}
	return rows
}

// ErrDamaged is wrapped by Check's errors: a marker that decodes but lacks
// a setting every marker of its version holds, or leaves one empty that
// must hold a value. It carries the stable code errcode.SettingsDamaged
// (sink.ErrSettingsDamaged is the same error).
var ErrDamaged = errcode.New(errcode.SettingsDamaged, "the settings marker is damaged")

// Hint is what to do about a damaged marker.
const Hint = "restore it from the settings the folder's files were written with, " +
	"or delete the folder's files and its " + ownkeys.SettingsName + " to rewrite them, " +
	"or write to a fresh Prefix"

// DamagedError is Check's error. It wraps ErrDamaged.
type DamagedError struct {
	// Missing are the settings the marker lacks, in the marker's order;
	// every one of them when the marker holds only its header line.
	Missing []string
	// Empty are the settings that hold "" where the marker's format and
	// compression call for a value.
	Empty []string
	// Invalid are the settings whose value no release writes (a count
	// that is not a positive number, a Shards that is neither a count
	// nor "auto:" and one).
	Invalid []string
}

func (e *DamagedError) Error() string { return e.Damage() + ": " + ErrDamaged.Error() }

// Damage says what is wrong with the marker, for a message that names it:
// "lacks settings format, shards (damaged: truncated or edited outside
// s3once)".
func (e *DamagedError) Damage() string {
	var b strings.Builder
	switch {
	case len(e.Missing) == len(required):
		b.WriteString("holds no setting but its header line")
	case len(e.Missing) > 0:
		fmt.Fprintf(&b, "lacks settings %s", strings.Join(e.Missing, ", "))
	}
	if len(e.Empty) > 0 {
		if b.Len() > 0 {
			b.WriteString(", and ")
		}
		fmt.Fprintf(&b, "leaves settings %s empty, which its format and compression give a value", strings.Join(e.Empty, ", "))
	}
	if len(e.Invalid) > 0 {
		if b.Len() > 0 {
			b.WriteString(", and ")
		}
		fmt.Fprintf(&b, "holds values no s3once writes for %s", strings.Join(e.Invalid, ", "))
	}
	b.WriteString(" (damaged: truncated or edited outside s3once)")
	return b.String()
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// Check reports whether m holds every setting Required names for its
// format and compression: nil, or a *DamagedError. A marker that decoded to
// no settings at all (its header line only) is damaged, never "no marker".
func Check(m Settings) error {
	if mutMarkerSubset() {
		return nil
	}
	format, _ := m.Get("format")
	compression, _ := m.Get("compression")
	var e DamagedError
	for _, r := range Required(format, compression) {
		v, ok := m.Get(r.Name)
		switch {
		case !ok:
			e.Missing = append(e.Missing, r.Name)
		case r.Value && v == "":
			e.Empty = append(e.Empty, r.Name)
		case v != "" && !wellFormed(r.Name, v):
			e.Invalid = append(e.Invalid, r.Name)
		}
	}
	if len(e.Missing) > 0 || len(e.Empty) > 0 || len(e.Invalid) > 0 {
		return &e
	}
	return nil
}

// counts are the settings whose value, where set, is a count a release
// writes in decimal: a positive number (shards also as "auto:" and one).
var counts = map[string]bool{
	"checkpoint-sync-bytes": true, "max-batch-bytes": true, "max-file-bytes": true,
	"max-file-records": true, "output-version": true, "shards": true,
}

// wellFormed reports whether v is a value a release writes for the
// setting name; settings other than the counts take any value.
func wellFormed(name, v string) bool {
	if !counts[name] {
		return true
	}
	if name == "shards" {
		v = strings.TrimPrefix(v, "auto:")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && strconv.FormatInt(n, 10) == v && (n > 0 || name != "shards" && name != "output-version" && n == 0)
}
