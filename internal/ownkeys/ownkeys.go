package ownkeys

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Folder turns a prefix into the folder it names: "" stays "" (the bucket's
// root); anything else gets a trailing '/' unless it has one. "events" and
// "events/" are the same folder, and neither holds "events-v2/...". (This is
// how side-object keys have always been joined, so tokens of every release
// name the same keys.)
func Folder(prefix string) string {
	if prefix == "" || strings.HasSuffix(prefix, "/") {
		return prefix
	}
	return prefix + "/"
}

// SameFolder reports whether two prefixes name the same folder.
func SameFolder(a, b string) bool { return Folder(a) == Folder(b) }

// Under reports whether key lies inside the folder prefix names (the key
// itself being more than the folder). Every key is under the root "".
func Under(prefix, key string) bool {
	f := Folder(prefix)
	return len(key) > len(f) && strings.HasPrefix(key, f)
}

// Overlap reports whether a key can lie in both folders: one holds the other.
func Overlap(a, b string) bool {
	fa, fb := Folder(a), Folder(b)
	return strings.HasPrefix(fa, fb) || strings.HasPrefix(fb, fa)
}

// ---- side objects -------------------------------------------------------

// seqDigits is the width of a side object's persist number.
const seqDigits = 20

// maxNonce bounds the nonce of a side-object name.
const maxNonce = 64

// SideObjectPrefix is the folder of every side object of an upload:
// <staging folder><escaped upload ID>/. The upload ID is escaped so that it
// is one key segment (see EscapeUploadID).
func SideObjectPrefix(staging, uploadID string) string {
	return Folder(staging) + EscapeUploadID(uploadID) + "/"
}

// SideObjectKey is the key of the side object of persist seq of one stream
// incarnation: <SideObjectPrefix><seq as 20 digits>-<nonce>. An empty nonce
// gives the older form without one, which tokens of early releases hold.
func SideObjectKey(staging, uploadID string, seq uint64, nonce string) string {
	b := make([]byte, 0, seqDigits+1+len(nonce))
	b = appendPadded(b, seq)
	if nonce != "" {
		b = append(b, '-')
		b = append(b, nonce...)
	}
	return SideObjectPrefix(staging, uploadID) + string(b)
}

// IsSideObjectOf reports whether key is a side object of the upload under
// staging: inside SideObjectPrefix(staging, uploadID), and named as a side
// object is.
func IsSideObjectOf(staging, uploadID, key string) bool {
	if !validUploadSegment(EscapeUploadID(uploadID)) {
		return false
	}
	p := SideObjectPrefix(staging, uploadID)
	return strings.HasPrefix(key, p) && IsSideObjectName(key[len(p):])
}

// IsSideObject reports whether key is a side object of any upload under the
// staging folder: <staging folder><upload segment>/<side-object name>.
func IsSideObject(staging, key string) bool {
	f := Folder(staging)
	if !strings.HasPrefix(key, f) {
		return false
	}
	seg, name, ok := strings.Cut(key[len(f):], "/")
	return ok && validUploadSegment(seg) && IsSideObjectName(name)
}

// IsSideObjectName reports whether name (the part after the upload's folder)
// is a side object's: 20 digits, then optionally '-' and a nonce of 1 to 64
// bytes of [A-Za-z0-9_-].
func IsSideObjectName(name string) bool {
	if len(name) < seqDigits || !allDigits(name[:seqDigits]) {
		return false
	}
	rest := name[seqDigits:]
	if rest == "" {
		return true
	}
	if rest[0] != '-' || len(rest) < 2 || len(rest)-1 > maxNonce {
		return false
	}
	for i := 1; i < len(rest); i++ {
		if !isWordByte(rest[i]) && rest[i] != '-' {
			return false
		}
	}
	return true
}

// validUploadSegment: what EscapeUploadID can make, but never "", "." or
// "..", which some file-backed servers would read as folders of the path.
func validUploadSegment(seg string) bool {
	if seg == "" || seg == "." || seg == ".." {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !isWordByte(c) && c != '.' && c != '-' && c != '%' {
			return false
		}
	}
	return true
}

// EscapeUploadID keeps an upload ID usable as one key segment: every byte
// outside [A-Za-z0-9._-] is written as %XX (upper-case hex).
func EscapeUploadID(id string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isWordByte(c) || c == '.' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// ---- output files -------------------------------------------------------

// FileName is what names one output file.
type FileName struct {
	// Window is "global" or the window's bounds as the sink renders them.
	Window string
	Pane   int64
	// Shard of Shards; SubBatch of SubBatches when the shard was split
	// (SubBatches > 1), else both are ignored.
	Shard, Shards        int
	SubBatch, SubBatches int
	File                 int
	// Ext is the format's and the codec's extensions, such as ".jsonl.gz".
	Ext string
}

// FileKey is the key of one output file:
//
//	<prefix folder><destination>/<window>-pane-<n>-shard-<SSSSS>-of-<NNNNN>[-batch-<BB>-of-<MM>]-file-<FFFFF><ext>
//
// with an empty destination (and its slash) left out.
func FileKey(prefix, destination string, n FileName) string {
	var k strings.Builder
	k.Grow(len(prefix) + len(destination) + len(n.Window) + len(n.Ext) + 64)
	k.WriteString(Folder(prefix))
	if destination != "" {
		k.WriteString(destination)
		k.WriteByte('/')
	}
	k.WriteString(n.Window)
	k.WriteString("-pane-")
	k.WriteString(strconv.FormatInt(n.Pane, 10))
	k.WriteString("-shard-")
	k.WriteString(pad(int64(n.Shard), 5))
	k.WriteString("-of-")
	k.WriteString(pad(int64(n.Shards), 5))
	if n.SubBatches > 1 {
		k.WriteString("-batch-")
		k.WriteString(pad(int64(n.SubBatch), 2))
		k.WriteString("-of-")
		k.WriteString(pad(int64(n.SubBatches), 2))
	}
	k.WriteString("-file-")
	k.WriteString(pad(int64(n.File), 5))
	k.WriteString(n.Ext)
	return k.String()
}

// IsFileName reports whether key is an s3once output file under the folder
// prefix: every segment between the folder and the name is a destination
// segment (not empty, "." or ".."), and the name has FileKey's shape.
func IsFileName(prefix, key string) bool {
	if !Under(prefix, key) {
		return false
	}
	rest := key[len(Folder(prefix)):]
	name := rest
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		name = rest[i+1:]
		for _, seg := range strings.Split(rest[:i], "/") {
			if seg == "" || seg == "." || seg == ".." {
				return false
			}
		}
	}
	return isFileBase(name)
}

// isFileBase matches <window>-pane-<n>-shard-<d5+>-of-<d5+>[-batch-<d2+>-of-<d2+>]-file-<d5+><ext>.
func isFileBase(name string) bool {
	i := strings.Index(name, "-pane-")
	if i < 0 || !isWindow(name[:i]) {
		return false
	}
	s := name[i+len("-pane-"):]
	var ok bool
	if s, ok = digits(s, 1); !ok {
		return false
	}
	if s, ok = literal(s, "-shard-"); !ok {
		return false
	}
	if s, ok = digits(s, 5); !ok {
		return false
	}
	if s, ok = literal(s, "-of-"); !ok {
		return false
	}
	if s, ok = digits(s, 5); !ok {
		return false
	}
	if t, ok := literal(s, "-batch-"); ok {
		if s, ok = digits(t, 2); !ok {
			return false
		}
		if s, ok = literal(s, "-of-"); !ok {
			return false
		}
		if s, ok = digits(s, 2); !ok {
			return false
		}
	}
	if s, ok = literal(s, "-file-"); !ok {
		return false
	}
	if s, ok = digits(s, 5); !ok {
		return false
	}
	return isExt(s)
}

// isWindow matches "global" or two UTC bounds, 20060102T150405Z with
// optional milliseconds, joined by '-'.
func isWindow(w string) bool {
	if w == "global" {
		return true
	}
	a, b, ok := strings.Cut(w, "-")
	return ok && isWindowTime(a) && isWindowTime(b)
}

func isWindowTime(t string) bool {
	// 20060102T150405Z or 20060102T150405.000Z
	switch len(t) {
	case 16:
		return allDigits(t[:8]) && t[8] == 'T' && allDigits(t[9:15]) && t[15] == 'Z'
	case 20:
		return allDigits(t[:8]) && t[8] == 'T' && allDigits(t[9:15]) && t[15] == '.' && allDigits(t[16:19]) && t[19] == 'Z'
	}
	return false
}

// isExt matches "" or one or more ".<word>" groups.
func isExt(s string) bool {
	for s != "" {
		if s[0] != '.' {
			return false
		}
		s = s[1:]
		n := 0
		for n < len(s) && (isWordByte(s[n]) || s[n] == '-' || s[n] == '+') {
			n++
		}
		if n == 0 {
			return false
		}
		s = s[n:]
	}
	return true
}

// ---- probes -------------------------------------------------------------

// Names of the probes' folders and objects.
const (
	outputProbeFolder  = "_s3once_preflight/"
	stagingProbeFolder = "preflight/"
	condProbePrefix    = "preflight-"
	clockProbeFolder   = "clock/"
	maxProbeID         = 64
)

// PreflightOutputKey is the key of the sink preflight's upload under the
// output prefix: <prefix folder>_s3once_preflight/<id>.
func PreflightOutputKey(prefix, id string) string {
	return Folder(prefix) + outputProbeFolder + id
}

// PreflightSideKey and PreflightCompleteKey are the sink preflight's side
// object and conditionally completed upload under the staging prefix:
// <staging folder>preflight/<id>/side and .../complete.
func PreflightSideKey(staging, id string) string {
	return Folder(staging) + stagingProbeFolder + id + "/side"
}

// PreflightCompleteKey: see PreflightSideKey.
func PreflightCompleteKey(staging, id string) string {
	return Folder(staging) + stagingProbeFolder + id + "/complete"
}

// ConditionalProbeKey is the committer's conditional-write probe:
// <staging folder>preflight-<name>.
func ConditionalProbeKey(staging, name string) string {
	return Folder(staging) + condProbePrefix + name
}

// ClockProbeKey is the object a sweep writes to read the server's clock
// where replies carry no Date: <staging folder>clock/<name>.
func ClockProbeKey(staging, name string) string {
	return Folder(staging) + clockProbeFolder + name
}

// IsOutputProbe reports whether key is a preflight probe under the output
// folder prefix.
func IsOutputProbe(prefix, key string) bool {
	p := Folder(prefix) + outputProbeFolder
	return strings.HasPrefix(key, p) && isProbeID(key[len(p):])
}

// IsStagingProbe reports whether key is one of s3once's probes under the
// staging folder: the sink preflight's side object or completed upload, the
// committer's conditional-write probe, or a sweep's clock probe.
func IsStagingProbe(staging, key string) bool {
	f := Folder(staging)
	if !strings.HasPrefix(key, f) {
		return false
	}
	rest := key[len(f):]
	switch {
	case strings.HasPrefix(rest, stagingProbeFolder):
		id, leaf, ok := strings.Cut(rest[len(stagingProbeFolder):], "/")
		return ok && isProbeID(id) && (leaf == "side" || leaf == "complete")
	case strings.HasPrefix(rest, condProbePrefix):
		return isProbeID(rest[len(condProbePrefix):])
	case strings.HasPrefix(rest, clockProbeFolder):
		return isProbeID(rest[len(clockProbeFolder):])
	}
	return false
}

// IsProbe reports whether key is any of s3once's probes, under the output
// folder or the staging folder.
func IsProbe(prefix, staging, key string) bool {
	return IsOutputProbe(prefix, key) || IsStagingProbe(staging, key)
}

// isProbeID: 1 to 64 bytes of [A-Za-z0-9_-] (the sink's time-and-random IDs,
// the committer's hex names).
func isProbeID(id string) bool {
	if id == "" || len(id) > maxProbeID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isWordByte(id[i]) && id[i] != '-' {
			return false
		}
	}
	return true
}

// ---- owned by s3once ----------------------------------------------------

// IsOwnStaging reports whether key, under the staging folder, is one s3once
// writes there: a side object or a probe.
func IsOwnStaging(staging, key string) bool {
	return IsSideObject(staging, key) || IsStagingProbe(staging, key)
}

// ---- where staging may lie ----------------------------------------------

// ErrStagingOverlap is wrapped by CheckStagingApart's errors.
var ErrStagingOverlap = errors.New("staging prefix overlaps the output prefix")

// CheckStagingApart checks that the staging folder neither holds the output
// folder nor lies where the output's readers look. Staging may lie under the
// output prefix only below a segment that starts with '.' or '_' (which
// Spark, Hive, Trino and Athena skip), so the default ".s3once/staging/"
// under any prefix is fine. An empty staging prefix (the bucket's root) holds
// everything and is refused.
func CheckStagingApart(prefix, staging string) error {
	st, out := Folder(staging), Folder(prefix)
	if st == "" {
		return fmt.Errorf("%w: an empty StagingPrefix is the whole bucket", ErrStagingOverlap)
	}
	if strings.HasPrefix(out, st) {
		return fmt.Errorf("%w: Prefix %q lies under StagingPrefix %q: the sweep would delete the output", ErrStagingOverlap, prefix, staging)
	}
	if !strings.HasPrefix(st, out) {
		return nil
	}
	for _, seg := range strings.Split(strings.TrimSuffix(st[len(out):], "/"), "/") {
		if strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") {
			return nil
		}
	}
	return fmt.Errorf("%w: StagingPrefix %q lies under Prefix %q where the output's readers would see side objects; move it, or start one of its segments below the prefix with '.' or '_'", ErrStagingOverlap, staging, prefix)
}

// ---- helpers ------------------------------------------------------------

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// digits takes at least min decimal digits off the front of s.
func digits(s string, min int) (string, bool) {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	if n < min {
		return s, false
	}
	return s[n:], true
}

func literal(s, lit string) (string, bool) {
	if !strings.HasPrefix(s, lit) {
		return s, false
	}
	return s[len(lit):], true
}

// appendPadded formats seq as 20 decimal digits, so keys list in persist order.
func appendPadded(b []byte, seq uint64) []byte {
	var d [seqDigits]byte
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + seq%10)
		seq /= 10
	}
	return append(b, d[:]...)
}

// pad writes n in decimal, zero-padded to width digits.
func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

// FileNamesExt takes the files' extension from a settings marker's
// file-names setting: the file-name template, which ends with the file
// number "<FFFFF>" and then the extension. ok is false for a template this
// version does not know, or an extension no file name may end with.
func FileNamesExt(names string) (ext string, ok bool) {
	const last = "-file-<FFFFF>"
	i := strings.LastIndex(names, last)
	if i < 0 {
		return "", false
	}
	ext = names[i+len(last):]
	return ext, IsFileName("", "global-pane-0-shard-00000-of-00001-file-00000"+ext)
}

// HasFileExt reports whether the file name key ends with its file number
// followed by exactly ext: a name of the same shape with more after the
// extension (".jsonl.gz.other") or another extension is not one of the
// files of a folder whose settings marker names ext.
func HasFileExt(key, ext string) bool {
	rest, ok := strings.CutSuffix(key, ext)
	return ok && rest != "" && rest[len(rest)-1] >= '0' && rest[len(rest)-1] <= '9'
}
