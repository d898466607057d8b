package s3mem

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"net/http"
	"strings"

	"github.com/minio/crc64nvme"
)

// The checksum algorithms S3 takes, in the spelling of its headers' values.
var algorithms = []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"}

// Checksum types of objects and uploads.
const (
	fullObject = "FULL_OBJECT"
	composite  = "COMPOSITE"
)

func checksumHeader(alg string) string { return "x-amz-checksum-" + strings.ToLower(alg) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// hasherOf returns a fresh digest of alg, nil for an unknown one.
func hasherOf(alg string) hash.Hash {
	switch alg {
	case "CRC32":
		return crc32.NewIEEE()
	case "CRC32C":
		return crc32.New(castagnoli)
	case "CRC64NVME":
		return crc64nvme.New()
	case "SHA1":
		return sha1.New()
	case "SHA256":
		return sha256.New()
	}
	return nil
}

// rawChecksum is alg's digest of the concatenation of chunks, as bytes
// (CRCs big-endian, as their hashes' Sum gives them).
func rawChecksum(alg string, chunks ...[]byte) []byte {
	h := hasherOf(alg)
	if h == nil {
		return nil
	}
	for _, c := range chunks {
		h.Write(c)
	}
	return h.Sum(nil)
}

// checksum is alg's digest of data, base64-encoded as S3 sends it.
func checksum(alg string, data []byte) string {
	return base64.StdEncoding.EncodeToString(rawChecksum(alg, data))
}

// checksumOf is alg's digest of the concatenation of chunks, base64-encoded.
func checksumOf(alg string, chunks [][]byte) string {
	return base64.StdEncoding.EncodeToString(rawChecksum(alg, chunks...))
}

// knownAlgorithm returns alg in S3's spelling, or "" if S3 takes no such
// algorithm.
func knownAlgorithm(alg string) string {
	for _, a := range algorithms {
		if strings.EqualFold(a, alg) {
			return a
		}
	}
	return ""
}

// checksums are the checksums of one body or object, by algorithm.
type checksums map[string]string

// sentChecksums reads the x-amz-checksum-* headers of a request and checks
// each against body. It returns the checksums sent, or an error reply.
func sentChecksums(h http.Header, body []byte) (checksums, *reply) {
	cs := checksums{}
	for _, alg := range algorithms {
		v := h.Get(checksumHeader(alg))
		if v == "" {
			continue
		}
		if got := checksum(alg, body); got != v {
			return nil, errReply(http.StatusBadRequest, "BadDigest", fmt.Sprintf("The %s you specified did not match the calculated checksum.", alg))
		}
		cs[alg] = v
	}
	if len(cs) > 1 {
		return nil, errReply(http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	return cs, nil
}

// checkBodyDigests checks Content-MD5 and a hex x-amz-content-sha256 against
// the body received.
func checkBodyDigests(h http.Header, body []byte) *reply {
	if v := h.Get("Content-MD5"); v != "" {
		want, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(want) != md5.Size {
			return errReply(http.StatusBadRequest, "InvalidDigest", "The Content-MD5 you specified was invalid.")
		}
		if got := md5.Sum(body); string(got[:]) != string(want) {
			return errReply(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
		}
	}
	if v := h.Get("x-amz-content-sha256"); len(v) == 64 && !strings.ContainsFunc(v, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }) {
		if got := sha256.Sum256(body); fmt.Sprintf("%x", got) != v {
			return errReply(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
	}
	return nil
}

// compositeChecksum is S3's checksum-of-checksums of a multipart object:
// alg's digest of the parts' raw digests, suffixed with the part count.
func compositeChecksum(alg string, parts []*part) string {
	var cat []byte
	for _, p := range parts {
		raw, err := base64.StdEncoding.DecodeString(p.checksums[alg])
		if err != nil || len(raw) == 0 {
			raw = rawChecksum(alg, p.data)
		}
		cat = append(cat, raw...)
	}
	return fmt.Sprintf("%s-%d", checksum(alg, cat), len(parts))
}

// multipartETag is S3's ETag of a multipart object: the MD5 of the parts'
// binary MD5s, suffixed with the part count.
func multipartETag(parts []*part) string {
	h := md5.New()
	for _, p := range parts {
		h.Write(p.md5[:])
	}
	return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts))
}
