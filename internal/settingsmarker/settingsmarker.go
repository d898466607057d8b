// Package settingsmarker is the encoding of the settings marker,
// <prefix>/_s3once_settings (ownkeys.SettingsKey): the object that records
// the settings an output folder's files' bytes and names depend on. The
// sink writes and compares it; s3once verify reads it.
package settingsmarker

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Setting is one name and value of a marker.
type Setting struct{ Name, Value string }

// Settings is a marker's content: settings sorted by name, each once.
type Settings []Setting

// Get returns the value of the setting name, and whether the marker has it.
func (fp Settings) Get(name string) (string, bool) {
	for _, s := range fp {
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
// names it does not know (a later build may record more settings).
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
func Encode(fp Settings) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteString(strconv.Itoa(version))
	b.WriteByte('\n')
	for _, s := range fp {
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
	var fp Settings
	for len(rest) > 0 {
		var line []byte
		if line, rest, ok = bytes.Cut(rest, []byte{'\n'}); !ok {
			return nil, fmt.Errorf("%w: the last line has no end", ErrInvalid)
		}
		name, value, ok := bytes.Cut(line, []byte{'='})
		if !ok || !validName(name) {
			return nil, fmt.Errorf("%w: line %q is not name=value", ErrInvalid, line)
		}
		if len(fp) > 0 && fp[len(fp)-1].Name >= string(name) {
			return nil, fmt.Errorf("%w: setting %q is out of order", ErrInvalid, name)
		}
		val, err := unescape(value)
		if err != nil {
			return nil, fmt.Errorf("%w: setting %q: %w", ErrInvalid, name, err)
		}
		fp = append(fp, Setting{string(name), val})
	}
	return fp, nil
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
