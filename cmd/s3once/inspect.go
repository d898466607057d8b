package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/recoverable"
)

const inspectUsage = `Usage:
  s3once inspect [--base64 TOKEN | FILE | -]
  s3once inspect --bucket B --key K [--upload-id U] [--staging-prefix P]
                 [--prefix P] [--older-than AGE] [--json] [client flags]

With a token: decodes a resume token or a commit token, as the s3once coder
writes them into checkpoints, and prints it as JSON on stdout. The kind is
detected. The token is read from FILE, from stdin with '-' (or when no
argument is given), or from the --base64 flag. A file or stdin may hold the
raw bytes or their base64 text. The JSON gives the upload (bucket, key,
upload_id), the file's size and CRC64NVME (hex, and base64 as S3 prints
ChecksumCRC64NVME, so it can be compared with 'aws s3api head-object
--checksum-mode ENABLED'), the parts summary, the tail and where the
upload's side objects live.

With --bucket and --key: describes what the bucket holds for that key, for
an operator who has a key (from a log line, an error or a listing) and no
token. It reports the object at the key (size, ETag, checksum type and
CRC64NVME when the server gives them), every open multipart upload of
exactly that key (or only --upload-id) with its parts (sizes, ETags, part
checksums), each upload's side objects under --staging-prefix (the latest
tail marked), and what s3once would do: "committed" (an object is at the
key; any upload of it is a left-over), "open" (resumable from a token that
names it, if a runner's checkpoint still holds one: a writer that died on
the embedded runner leaves none), or "left-over" (initiated more than
--older-than ago: the sweep would abort it), with the sweep command that
removes left-overs: on the same server (--s3-endpoint, --path-style,
--region, --profile as given), under the sink's prefix (--prefix, else the
nearest folder above the key with a settings marker, else the key's
folder). It only reads: nothing in the bucket changes. Ages use this
machine's clock.

Exit codes: 0 decoded or described, 1 not a valid token (or unreadable), or
an S3 call failed, 2 usage error.
`

// maxTokenInput bounds what inspect reads: tokens are small (an inline tail
// is at most 64 KiB), so anything much larger is not one.
const maxTokenInput = 4 << 20

func inspectCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("inspect", inspectUsage)
	var (
		b64       = fs.String("base64", "", "the token as base64 text (standard or URL alphabet)")
		bucket    = fs.String("bucket", "", "describe a key of this bucket instead of a token")
		key       = fs.String("key", "", "the key to describe (with --bucket)")
		uploadID  = fs.String("upload-id", "", "describe only this upload of the key")
		staging   = fs.String("staging-prefix", s3call.DefaultStagingPrefix, "prefix of the side objects")
		prefix    = fs.String("prefix", "", "the sink's output prefix, for the sweep command (default: the nearest folder above the key with a settings marker, else the key's folder)")
		asJSON    = fs.Bool("json", false, "print the description as JSON")
		olderThan = age{d: 7 * 24 * time.Hour}
		cf        clientFlags
	)
	fs.Var(&olderThan, "older-than", "the sweep's cutoff: uploads initiated longer ago are left-overs (a duration, 36h, or days, 7d)")
	cf.register(fs)
	if err := parse(fs, args, e.stdout); err != nil {
		return err
	}
	if *bucket != "" || *key != "" {
		switch {
		case *bucket == "" || *key == "":
			return usagef("--bucket and --key go together")
		case *b64 != "" || fs.NArg() > 0:
			return usagef("give either a token or --bucket and --key, not both")
		}
		client, err := cf.client(ctx)
		if err != nil {
			return err
		}
		rep, err := inspectKey(ctx, client, *bucket, *key, *uploadID, *staging, *prefix, cf, olderThan.d, time.Now())
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(e.stdout, rep)
		}
		printKeyReport(e.stdout, rep)
		return nil
	}
	var raw []byte
	switch {
	case *b64 != "" && fs.NArg() > 0:
		return usagef("give the token either with --base64 or as FILE, not both")
	case fs.NArg() > 1:
		return usagef("one token at a time (got %d arguments)", fs.NArg())
	case *b64 != "":
		b, ok := decodeBase64(*b64)
		if !ok {
			return usagef("--base64 is not valid base64")
		}
		raw = b
	default:
		var r io.Reader = e.stdin
		name := "stdin"
		if fs.NArg() == 1 && fs.Arg(0) != "-" {
			name = fs.Arg(0)
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("read token: %w", err)
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(io.LimitReader(r, maxTokenInput+1))
		if err != nil {
			return fmt.Errorf("read token from %s: %w", name, err)
		}
		if len(b) > maxTokenInput {
			return fmt.Errorf("%s holds more than %d bytes: not a token", name, maxTokenInput)
		}
		raw = b
	}
	out, err := describeToken(raw)
	if err != nil {
		return err
	}
	return writeJSON(e.stdout, out)
}

// decodeBase64 accepts standard or URL-safe base64, padded or not, with
// whitespace anywhere.
func decodeBase64(s string) ([]byte, bool) {
	s = strings.Join(strings.Fields(s), "")
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) > 0 {
			return b, true
		}
	}
	return nil, false
}

// describeToken decodes raw as a resume or a commit token; failing that, as
// the base64 text of one.
func describeToken(raw []byte) (tokenJSON, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return tokenJSON{}, errors.New("no token: the input is empty")
	}
	t, err := decodeToken(raw)
	if err == nil {
		return t, nil
	}
	if errors.Is(err, coder.ErrBadMagic) {
		if b, ok := decodeBase64(string(bytes.TrimSpace(raw))); ok {
			if t, err2 := decodeToken(b); err2 == nil || !errors.Is(err2, coder.ErrBadMagic) {
				return t, err2
			}
		}
	}
	return tokenJSON{}, err
}

// decodeToken tries both decoders. When exactly one recognises the bytes
// (their magic) but refuses them, its error is returned; otherwise both are.
func decodeToken(b []byte) (tokenJSON, error) {
	rr, rerr := coder.DecodeResumeToken(b)
	if rerr == nil {
		return resumeJSON(rr, len(b)), nil
	}
	cr, cerr := coder.DecodeCommitToken(b)
	if cerr == nil {
		return commitJSON(cr, len(b)), nil
	}
	rOurs, cOurs := !errors.Is(rerr, coder.ErrBadMagic), !errors.Is(cerr, coder.ErrBadMagic)
	switch {
	case rOurs && !cOurs:
		return tokenJSON{}, fmt.Errorf("not a valid resume token: %w", rerr)
	case cOurs && !rOurs:
		return tokenJSON{}, fmt.Errorf("not a valid commit token: %w", cerr)
	}
	return tokenJSON{}, fmt.Errorf("neither a resume nor a commit token (%d bytes): as a resume token: %w; as a commit token: %w", len(b), rerr, cerr)
}

// tokenJSON is inspect's output; its field names are part of the tool's
// interface.
type tokenJSON struct {
	Kind             string    `json:"kind"` // "resume" or "commit"
	EncodedBytes     int       `json:"encoded_bytes"`
	Bucket           string    `json:"bucket"`
	Key              string    `json:"key"`
	UploadID         string    `json:"upload_id"`
	StagingPrefix    string    `json:"staging_prefix"`
	SideObjectPrefix string    `json:"side_object_prefix"`
	Size             int64     `json:"size"`
	CRC64NVME        string    `json:"crc64nvme"`
	CRC64NVMEBase64  string    `json:"crc64nvme_base64"`
	PartSize         int64     `json:"part_size,omitempty"`
	Seq              uint64    `json:"persist_seq,omitempty"`
	Parts            partsJSON `json:"parts"`
	Tail             *tailJSON `json:"tail,omitempty"`
}

type partsJSON struct {
	Count     int    `json:"count"`
	Bytes     int64  `json:"bytes"`
	Digest    string `json:"digest_sha256"`
	CRC64NVME string `json:"crc64nvme"`
}

type tailJSON struct {
	Length       int64  `json:"length"`
	CRC64NVME    string `json:"crc64nvme"`
	Storage      string `json:"storage"` // "none", "inline" or "side-object"
	Object       string `json:"object,omitempty"`
	InlineBase64 string `json:"inline_base64,omitempty"`
}

func crcHex(c uint64) string { return fmt.Sprintf("%016x", c) }

func partsOf(p recoverable.PartList) partsJSON {
	return partsJSON{Count: p.Count, Bytes: p.Bytes, Digest: hex.EncodeToString(p.Digest[:]), CRC64NVME: crcHex(p.CRC)}
}

func resumeJSON(r recoverable.ResumeToken, n int) tokenJSON {
	t := &tailJSON{Length: r.Tail.Len, CRC64NVME: crcHex(r.Tail.CRC), Storage: "none"}
	switch {
	case r.Tail.Object != "":
		t.Storage, t.Object = "side-object", r.Tail.Object
	case r.Tail.Len > 0:
		t.Storage, t.InlineBase64 = "inline", base64.StdEncoding.EncodeToString(r.Tail.Inline)
	}
	return tokenJSON{
		Kind: "resume", EncodedBytes: n,
		Bucket: r.Bucket, Key: r.Key, UploadID: r.UploadID,
		StagingPrefix: r.StagingPrefix, SideObjectPrefix: recoverable.SideObjectPrefix(r.StagingPrefix, r.UploadID),
		Size: r.Size(), CRC64NVME: crcHex(r.CRC()), CRC64NVMEBase64: s3call.EncodeCRC(r.CRC()),
		PartSize: r.PartSize, Seq: r.Seq, Parts: partsOf(r.Parts), Tail: t,
	}
}

func commitJSON(c recoverable.CommitToken, n int) tokenJSON {
	return tokenJSON{
		Kind: "commit", EncodedBytes: n,
		Bucket: c.Bucket, Key: c.Key, UploadID: c.UploadID,
		StagingPrefix: c.StagingPrefix, SideObjectPrefix: recoverable.SideObjectPrefix(c.StagingPrefix, c.UploadID),
		Size: c.Size(), CRC64NVME: crcHex(c.CRC()), CRC64NVMEBase64: s3call.EncodeCRC(c.CRC()),
		Parts: partsOf(c.Parts),
	}
}
