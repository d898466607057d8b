package main

// verify --read: a file's bytes decoded with its codec and format, and its
// records counted where a record can be counted. Only the codecs and
// formats s3once registers itself are known here (the CLI links neither
// the sink nor Beam): a folder of another codec or format is read as far
// as verify knows it, and says what it could not check.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// fileKind is how verify reads a file: its codec and its format, by the
// names the sink registers them under ("" where verify does not know it).
type fileKind struct {
	codec, format string
}

// Codecs and formats verify reads, by their extensions.
var (
	codecExts    = map[string]string{".gz": "gzip", ".zst": "zstd"}
	formatExts   = map[string]string{".txt": "text", ".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
	knownFormats = map[string]bool{"text": true, "jsonl": true, "csv": true, "parquet": true}
)

// kindOf is how to read a file of extension ext. The settings marker's
// Format and Compression win where it gives them for this extension (a
// Format registered under another name is not one verify knows, whatever
// its extension); without them, the extension says it.
func kindOf(ext, markerExt, markerFormat, markerCodec string) fileKind {
	var k fileKind
	rest := ext
	for e, c := range codecExts {
		if base, ok := strings.CutSuffix(ext, e); ok {
			k.codec, rest = c, base
		}
	}
	if k.codec == "" {
		k.codec = "none"
	}
	k.format = formatExts[rest]
	if ext == markerExt && markerFormat != "" {
		k = fileKind{}
		if knownFormats[markerFormat] {
			k.format = markerFormat
		}
		switch markerCodec {
		case "none", "gzip", "zstd":
			k.codec = markerCodec
		}
	}
	return k
}

// fileContent is what reading a file found.
type fileContent struct {
	// records is the file's record count where counted: lines of text and
	// JSON Lines, rows of Parquet (the footer's num_rows). CSV is not
	// counted: a quoted field may hold a newline, and a header is not a
	// record.
	records int64
	counted bool
	// oneRecord: every record of the file is the same bytes (counted line
	// formats only; false where not known).
	oneRecord bool
}

// errFormatUnknown: verify does not know the file's codec or format, so
// its bytes cannot be checked.
var errFormatUnknown = errors.New("verify does not know this codec or format")

// readContent decodes body as a file of kind k.
func readContent(body []byte, k fileKind) (fileContent, error) {
	var r io.Reader = bytes.NewReader(body)
	switch k.codec {
	case "none":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fileContent{}, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fileContent{}, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return fileContent{}, errFormatUnknown
	}
	switch k.format {
	case "text", "jsonl":
		return readLines(r, k.format == "jsonl")
	case "csv":
		cr := csv.NewReader(r)
		cr.FieldsPerRecord = -1
		n := 0
		for ; ; n++ {
			if _, err := cr.Read(); err == io.EOF {
				break
			} else if err != nil {
				return fileContent{}, fmt.Errorf("csv: %w", err)
			}
		}
		if n == 0 {
			return fileContent{}, errors.New("csv: no record (s3once writes no empty file)")
		}
		return fileContent{}, nil
	case "parquet":
		b, err := io.ReadAll(r)
		if err != nil {
			return fileContent{}, fmt.Errorf("%s: %w", k.codec, err)
		}
		rows, err := parquetRows(b)
		if err != nil {
			return fileContent{}, fmt.Errorf("parquet: %w", err)
		}
		return fileContent{records: rows, counted: true}, nil
	}
	// A codec verify knows and a format it does not: the codec is checked,
	// the content cannot be.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fileContent{}, fmt.Errorf("%s: %w", k.codec, err)
	}
	return fileContent{}, errFormatUnknown
}

// readLines counts the newline-terminated records of a text or JSON Lines
// file; each JSON Lines record must be one JSON value.
func readLines(r io.Reader, jsonl bool) (fileContent, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		c     = fileContent{counted: true, oneRecord: true}
		first []byte
	)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 {
				return fileContent{}, fmt.Errorf("record %d does not end with a newline: the file is cut short or not s3once's", c.records+1)
			}
			break
		}
		if err != nil {
			return fileContent{}, err
		}
		if jsonl && !json.Valid(line) {
			return fileContent{}, fmt.Errorf("jsonl: record %d is not a JSON value", c.records+1)
		}
		if c.records == 0 {
			first = line
		} else if c.oneRecord && !bytes.Equal(line, first) {
			c.oneRecord = false
		}
		c.records++
	}
	if c.records == 0 {
		return fileContent{}, errors.New("no record (s3once writes no empty file)")
	}
	return c, nil
}

// parquetMagic opens and closes a Parquet file whose footer is plain.
const parquetMagic = "PAR1"

// parquetRows is the row count a Parquet file's footer records
// (FileMetaData.num_rows).
func parquetRows(b []byte) (int64, error) {
	if len(b) < 12 || string(b[:4]) != parquetMagic || string(b[len(b)-4:]) != parquetMagic {
		return 0, errors.New("no PAR1 magic at its start and end (cut short, encrypted, or not Parquet)")
	}
	l := b[len(b)-8:]
	n := int64(l[0]) | int64(l[1])<<8 | int64(l[2])<<16 | int64(l[3])<<24 // little-endian
	if n > int64(len(b)-12) {
		return 0, fmt.Errorf("its footer is %d bytes, longer than the file", n)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(&thrift.CompactProtocol{}, b[int64(len(b)-8)-n:len(b)-8], &md); err != nil {
		return 0, fmt.Errorf("its footer does not decode: %w", err)
	}
	if md.NumRows <= 0 {
		return 0, fmt.Errorf("its footer records %d rows (s3once writes no empty file)", md.NumRows)
	}
	return md.NumRows, nil
}
