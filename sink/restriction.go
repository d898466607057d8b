package sink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/s3once/s3once/internal/frame"
)

// restriction is the writer's restriction: the records [Start, End) of its
// batch that are still to be written, and where the file they go into stands.
//
// When Token is nil, record Start begins file FileIndex. Otherwise file
// FileIndex is open: Token is its encoded resume token
// (coder.EncodeResumeToken), and FileRecords records making FileBytes record bytes
// are in it already; record Start is its next one. A token is only ever taken
// where a compressed member ends (a sync point), so the file's bytes are
// complete streams up to the token.
type restriction struct {
	Start, End  int64
	FileIndex   int
	FileRecords int64
	FileBytes   int64
	Token       []byte
}

func (r restriction) String() string {
	return fmt.Sprintf("records [%d, %d) file %d (%d records, %d bytes, token %d bytes)", r.Start, r.End, r.FileIndex, r.FileRecords, r.FileBytes, len(r.Token))
}

// validate checks the restriction's own consistency.
func (r restriction) validate() error {
	switch {
	case r.Start < 0 || r.End < r.Start:
		return fmt.Errorf("bad record range [%d, %d)", r.Start, r.End)
	case r.FileIndex < 0:
		return fmt.Errorf("negative file index %d", r.FileIndex)
	case r.FileRecords < 0 || r.FileBytes < 0:
		return fmt.Errorf("negative file size (%d records, %d bytes)", r.FileRecords, r.FileBytes)
	case r.Token == nil && (r.FileRecords != 0 || r.FileBytes != 0):
		return fmt.Errorf("no open file, yet %d records and %d bytes in it", r.FileRecords, r.FileBytes)
	case r.Token != nil && r.FileRecords == 0:
		return errors.New("an open file without records")
	}
	return nil
}

// The restriction's encoding is a frame of internal/frame (magic "S3WR",
// version 1) around: Start, End, FileIndex, FileRecords, FileBytes as minimal
// uvarints, then the token's length (uvarint; 0 for none) and bytes. The
// token is carried as the writer made it: the restriction's coder never
// decodes it (the frame's checksum covers it); the writer decodes it once,
// when it resumes the file (fileWriter.recover).
var restrictionFraming = frame.Framing{Magic: [4]byte{'S', '3', 'W', 'R'}}

const restrictionVersion byte = 1

// errRestrictionEncoding is wrapped by every restriction decoding error.
var errRestrictionEncoding = errors.New("s3once sink: malformed restriction encoding")

func encodeRestriction(r restriction) ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("s3once sink: cannot encode restriction: %w", err)
	}
	p := make([]byte, 0, 5*binary.MaxVarintLen64+binary.MaxVarintLen32+len(r.Token))
	p = binary.AppendUvarint(p, uint64(r.Start))
	p = binary.AppendUvarint(p, uint64(r.End))
	p = binary.AppendUvarint(p, uint64(r.FileIndex))
	p = binary.AppendUvarint(p, uint64(r.FileRecords))
	p = binary.AppendUvarint(p, uint64(r.FileBytes))
	p = binary.AppendUvarint(p, uint64(len(r.Token)))
	p = append(p, r.Token...)
	b, err := restrictionFraming.Begin(restrictionVersion, len(p))
	if err == nil {
		b, err = restrictionFraming.End(append(b, p...))
	}
	if err != nil {
		return nil, fmt.Errorf("s3once sink: cannot encode restriction: %w", err)
	}
	return b, nil
}

// decodeRestriction decodes what encodeRestriction wrote. The result does not
// alias data.
func decodeRestriction(data []byte) (restriction, error) {
	_, p, err := restrictionFraming.Unframe(restrictionVersion, data)
	if err != nil {
		return restriction{}, fmt.Errorf("%w: %w", errRestrictionEncoding, err)
	}
	fr := frame.NewReader("restriction", p)
	var r restriction
	r.Start = int64(fr.Uvarint("Start", math.MaxInt64))
	r.End = int64(fr.Uvarint("End", math.MaxInt64))
	r.FileIndex = int(fr.Uvarint("FileIndex", math.MaxInt32))
	r.FileRecords = int64(fr.Uvarint("FileRecords", math.MaxInt64))
	r.FileBytes = int64(fr.Uvarint("FileBytes", math.MaxInt64))
	tok := fr.Bytes("Token", 0, fr.Remaining())
	if err := fr.Finish(); err != nil {
		return restriction{}, fmt.Errorf("%w: %w", errRestrictionEncoding, err)
	}
	if len(tok) > 0 {
		r.Token = bytes.Clone(tok)
	}
	if err := r.validate(); err != nil {
		return restriction{}, fmt.Errorf("%w: %w", errRestrictionEncoding, err)
	}
	return r, nil
}
