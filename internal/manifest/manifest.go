// Package manifest is the encoding of a partition manifest: the object
// <prefix>/<destination>/_s3once_manifest-<window> (ownkeys.ManifestKey)
// that lists every committed file of one partition, written once after the
// last of them is committed (output version 2 and later).
//
// A manifest is JSON Lines, one file per line, sorted by key, each key once:
//
//	{"key":"events/day=1/global-pane-0-shard-00000-of-00004-file-00000.jsonl","size":1234,"crc64nvme":"00ab34cd56ef7890","records":10}
//
// with the fields in that order, the key as the S3 key in full, size in
// bytes of the object, crc64nvme its full-object CRC64NVME as 16 lower-case
// hex digits, and records the number of records it holds. The encoding is
// canonical: the same files give the same bytes, so a rerun's manifest is
// byte-identical to the first run's, and Decode takes only what Encode
// writes. Any JSON Lines reader (DuckDB's read_json, jq, Spark) reads it.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Entry is one file of a partition.
type Entry struct {
	Key       string
	Size      int64
	CRC64NVME uint64
	Records   int64
}

// MaxBytes bounds a manifest that Decode takes: about 2.5 million files of
// a partition at 200 bytes a line.
const MaxBytes = 512 << 20

// ErrInvalid is wrapped by every error of Decode and Encode.
var ErrInvalid = errors.New("not an s3once partition manifest")

// line is an entry as JSON, fields in their order.
type line struct {
	Key       string `json:"key"`
	Size      int64  `json:"size"`
	CRC64NVME string `json:"crc64nvme"`
	Records   int64  `json:"records"`
}

// Encode writes the manifest of entries: sorted by key, identical entries
// once. Two entries with one key and other contents, an empty key, or a
// negative size or record count, or a key that is not UTF-8, are refused.
func Encode(entries []Entry) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	var b bytes.Buffer
	for i, e := range sorted {
		if i > 0 && sorted[i-1].Key == e.Key {
			if sorted[i-1] != e {
				return nil, fmt.Errorf("%w: the key %q is listed twice with other contents", ErrInvalid, e.Key)
			}
			continue
		}
		if err := check(e); err != nil {
			return nil, err
		}
		appendLine(&b, e)
	}
	return b.Bytes(), nil
}

func appendLine(b *bytes.Buffer, e Entry) {
	j, _ := json.Marshal(line{Key: e.Key, Size: e.Size, CRC64NVME: fmt.Sprintf("%016x", e.CRC64NVME), Records: e.Records}) // strings and integers always encode
	b.Write(j)
	b.WriteByte('\n')
}

func check(e Entry) error {
	switch {
	case e.Key == "":
		return fmt.Errorf("%w: an entry without a key", ErrInvalid)
	case !utf8.ValidString(e.Key):
		// JSON would write it as another key (U+FFFD for each bad byte);
		// S3 keys are UTF-8.
		return fmt.Errorf("%w: the key %q is not UTF-8", ErrInvalid, e.Key)
	case e.Size < 0:
		return fmt.Errorf("%w: %q has size %d", ErrInvalid, e.Key, e.Size)
	case e.Records < 0:
		return fmt.Errorf("%w: %q has %d records", ErrInvalid, e.Key, e.Records)
	}
	return nil
}

// Decode reads a manifest. It takes canonical encodings only (each line
// exactly as Encode writes it, keys strictly increasing), so that encoding
// what it returns gives b again.
func Decode(b []byte) ([]Entry, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, len(b), MaxBytes)
	}
	var out []Entry
	var enc bytes.Buffer
	for n := 1; len(b) > 0; n++ {
		raw, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("%w: line %d has no end", ErrInvalid, n)
		}
		b = rest
		var l line
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrInvalid, n, err)
		}
		if len(l.CRC64NVME) != 16 {
			return nil, fmt.Errorf("%w: line %d: crc64nvme %q is not 16 hex digits", ErrInvalid, n, l.CRC64NVME)
		}
		crc, err := strconv.ParseUint(l.CRC64NVME, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: crc64nvme %q is not 16 hex digits", ErrInvalid, n, l.CRC64NVME)
		}
		e := Entry{Key: l.Key, Size: l.Size, CRC64NVME: crc, Records: l.Records}
		if err := check(e); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(out) > 0 && out[len(out)-1].Key >= e.Key {
			return nil, fmt.Errorf("%w: line %d: key %q is out of order", ErrInvalid, n, e.Key)
		}
		enc.Reset()
		appendLine(&enc, e)
		if !bytes.Equal(enc.Bytes()[:enc.Len()-1], raw) {
			return nil, fmt.Errorf("%w: line %d is not in canonical form", ErrInvalid, n)
		}
		out = append(out, e)
	}
	return out, nil
}
