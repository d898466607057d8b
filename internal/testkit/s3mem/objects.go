package s3mem

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/s3once/s3once/internal/testkit/s3fault"
)

type bucket struct {
	objects map[string]*object
	// sorted holds the keys of objects in order while unsorted is false; a
	// new or deleted key sets unsorted, and the next listing sorts again.
	// A listing's page then costs a search, not a pass over the bucket.
	sorted   []string
	unsorted bool
	uploads  map[string]*upload // by upload ID
	// lagged are completed objects not visible yet (CrashLagged), by key.
	lagged map[string]laggedObject
}

// laggedObject is an object that shows at its key at a time of the Fake's
// clock.
type laggedObject struct {
	o  *object
	at time.Time
}

func newBucket() *bucket {
	return &bucket{objects: map[string]*object{}, uploads: map[string]*upload{}, lagged: map[string]laggedObject{}}
}

// put stores o at key.
func (b *bucket) put(key string, o *object) {
	if _, ok := b.objects[key]; !ok {
		b.unsorted = true
	}
	b.objects[key] = o
}

// remove deletes the object at key, if any.
func (b *bucket) remove(key string) {
	if _, ok := b.objects[key]; ok {
		b.unsorted = true
		delete(b.objects, key)
	}
}

// keysFrom returns the bucket's keys in order, from the first that starts
// with prefix and sorts after after.
func (b *bucket) keysFrom(prefix, after string) []string {
	if b.unsorted || len(b.sorted) != len(b.objects) {
		b.sorted = b.sorted[:0]
		for k := range b.objects {
			b.sorted = append(b.sorted, k)
		}
		sort.Strings(b.sorted)
		b.unsorted = false
	}
	i := sort.SearchStrings(b.sorted, prefix)
	if after >= prefix {
		i = sort.Search(len(b.sorted), func(i int) bool { return b.sorted[i] > after })
	}
	return b.sorted[i:]
}

// surface makes the lagged objects whose time has come visible, under f.mu.
func (f *Fake) surface(b *bucket) {
	now := f.now()
	for k, l := range b.lagged {
		if !now.Before(l.at) {
			b.put(k, l.o)
			delete(b.lagged, k)
		}
	}
}

// object is a stored object. Its fields never change once stored; a new
// write replaces the whole object.
type object struct {
	// chunks are the object's bytes in order: the body of a single write, or
	// a multipart object's parts, shared with them and never concatenated
	// (a completion copies no data; see chunksOf).
	chunks       [][]byte
	size         int64
	etag         string
	modified     time.Time
	checksums    checksums
	checksumType string
	parts        []*part // for a multipart object, its parts
	contentType  string
	encoding     string
}

// apply carries out a request against the store, under f.mu.
func (f *Fake) apply(r *request) *reply {
	if r.op == Unsupported {
		return errReply(http.StatusNotImplemented, "NotImplemented", fmt.Sprintf("s3mem does not implement %s %s?%s", r.method, "/"+r.bucket+"/"+r.key, r.q.Encode()))
	}
	if r.op == CreateBucket {
		if f.buckets[r.bucket] == nil {
			f.buckets[r.bucket] = newBucket()
		}
		rp := newReply(http.StatusOK)
		rp.header.Set("Location", "/"+r.bucket)
		return rp
	}
	b := f.buckets[r.bucket]
	if b == nil {
		return errReply(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
	}
	f.surface(b)
	switch r.op {
	case HeadBucket:
		rp := newReply(http.StatusOK)
		rp.header.Set("x-amz-bucket-region", Region)
		return rp
	case s3fault.GetBucketLifecycleConfiguration:
		if f.opts.LifecycleNotImplemented {
			return errReply(http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented")
		}
		return errReply(http.StatusNotFound, "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist")
	case s3fault.PutObject:
		return f.putObject(b, r)
	case s3fault.GetObject, s3fault.HeadObject:
		return f.getObject(b, r)
	case s3fault.DeleteObject:
		b.remove(r.key)
		return newReply(http.StatusNoContent)
	case s3fault.DeleteObjects:
		return f.deleteObjects(b, r)
	case s3fault.ListObjectsV2:
		return f.listObjects(b, r)
	case s3fault.CreateMultipartUpload:
		return f.createUpload(b, r)
	case s3fault.UploadPart:
		return f.uploadPart(b, r)
	case s3fault.ListParts:
		return f.listParts(b, r)
	case s3fault.CompleteMultipartUpload:
		return f.completeUpload(b, r)
	case s3fault.AbortMultipartUpload:
		u := b.uploads[r.q.Get("uploadId")]
		if u == nil || u.key != r.key {
			return noSuchUpload()
		}
		delete(b.uploads, u.id)
		return newReply(http.StatusNoContent)
	case s3fault.ListMultipartUploads:
		return f.listUploads(b, r)
	}
	return errReply(http.StatusNotImplemented, "NotImplemented", "s3mem does not implement "+string(r.op))
}

// precondition checks If-Match and If-None-Match of a write against the key's
// object (nil if none).
func precondition(r *request, cur *object) *reply {
	if v := r.h.Get("If-None-Match"); v != "" {
		if v != "*" {
			return errReply(http.StatusNotImplemented, "NotImplemented", "If-None-Match on writes takes only *")
		}
		if cur != nil {
			return errReply(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		}
	}
	if v := r.h.Get("If-Match"); v != "" {
		if cur == nil {
			return errReply(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		}
		if !etagMatches(v, cur.etag) {
			return errReply(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		}
	}
	return nil
}

func etagMatches(cond, etag string) bool {
	for _, c := range strings.Split(cond, ",") {
		c = strings.TrimSpace(c)
		if c == "*" || strings.Trim(c, `"`) == strings.Trim(etag, `"`) {
			return true
		}
	}
	return false
}

func (f *Fake) putObject(b *bucket, r *request) *reply {
	if rp := checkBodyDigests(r.h, r.body); rp != nil {
		return rp
	}
	cs, rp := sentChecksums(r.h, r.body)
	if rp != nil {
		return rp
	}
	if rp := precondition(r, b.objects[r.key]); rp != nil {
		return rp
	}
	if len(cs) == 0 {
		// S3 gives every object a CRC64NVME when the upload carries none.
		cs["CRC64NVME"] = checksum("CRC64NVME", r.body)
	}
	o := &object{
		chunks: [][]byte{r.body}, size: int64(len(r.body)), etag: f.etag(r.body), modified: f.now(), checksums: cs, checksumType: fullObject,
		contentType: r.h.Get("Content-Type"), encoding: r.h.Get("Content-Encoding"),
	}
	b.put(r.key, o)
	rp = newReply(http.StatusOK)
	rp.header.Set("ETag", o.etag)
	for alg, v := range cs {
		rp.header.Set(checksumHeader(alg), v)
	}
	rp.header.Set("x-amz-checksum-type", fullObject)
	return rp
}

// getObject serves GET and HEAD, with Range, partNumber, If-Match,
// If-None-Match and x-amz-checksum-mode.
func (f *Fake) getObject(b *bucket, r *request) *reply {
	o := b.objects[r.key]
	if o == nil {
		return errReply(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	}
	if v := r.h.Get("If-Match"); v != "" && !etagMatches(v, o.etag) {
		return errReply(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	}
	if v := r.h.Get("If-None-Match"); v != "" && etagMatches(v, o.etag) {
		rp := newReply(http.StatusNotModified)
		rp.header.Set("ETag", o.etag)
		return rp
	}
	size := o.size
	data := o.chunks
	status := http.StatusOK
	rp := newReply(status)
	whole := true
	if pn := r.q.Get("partNumber"); pn != "" {
		n, err := strconv.Atoi(pn)
		count := max(len(o.parts), 1)
		if err != nil || n < 1 || n > 10000 {
			return errReply(http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
		}
		if n > count {
			return errReply(http.StatusRequestedRangeNotSatisfiable, "InvalidPartNumber", "The requested partnumber is not satisfiable")
		}
		start := int64(0)
		if len(o.parts) > 0 {
			for _, p := range o.parts[:n-1] {
				start += int64(len(p.data))
			}
			data = [][]byte{o.parts[n-1].data}
		}
		rp.header.Set("x-amz-mp-parts-count", strconv.Itoa(count))
		if len(o.parts) > 0 {
			status = http.StatusPartialContent
			rp.header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+int64(len(o.parts[n-1].data))-1, size))
			whole = false
		}
	} else if rg := r.h.Get("Range"); rg != "" {
		start, end, ok := parseRange(rg, size)
		if !ok {
			rp := errReply(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable")
			rp.header.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			return rp
		}
		data = rangeOf(o.chunks, start, end+1)
		status = http.StatusPartialContent
		rp.header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
		whole = false
	}
	rp.status = status
	rp.header.Set("ETag", o.etag)
	rp.header.Set("Last-Modified", o.modified.Format(http.TimeFormat))
	rp.header.Set("Accept-Ranges", "bytes")
	rp.header.Set("Content-Length", strconv.FormatInt(chunksSize(data), 10))
	ct := o.contentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	rp.header.Set("Content-Type", ct)
	if o.encoding != "" {
		rp.header.Set("Content-Encoding", o.encoding)
	}
	if whole && strings.EqualFold(r.h.Get("x-amz-checksum-mode"), "ENABLED") {
		for alg, v := range o.checksums {
			rp.header.Set(checksumHeader(alg), v)
		}
		rp.header.Set("x-amz-checksum-type", o.checksumType)
	}
	if r.op == s3fault.GetObject {
		rp.chunks = data
	}
	return rp
}

// parseRange reads a single "bytes=" range against an object of size bytes
// and returns its first and last byte.
func parseRange(h string, size int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false
	}
	switch {
	case a == "": // the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 || size == 0 {
			return 0, 0, false
		}
		return max(size-n, 0), size - 1, true
	default:
		s, err := strconv.ParseInt(a, 10, 64)
		if err != nil || s < 0 || s >= size {
			return 0, 0, false
		}
		e := size - 1
		if b != "" {
			if e, err = strconv.ParseInt(b, 10, 64); err != nil || e < s {
				return 0, 0, false
			}
			e = min(e, size-1)
		}
		return s, e, true
	}
}

func (f *Fake) deleteObjects(b *bucket, r *request) *reply {
	if r.h.Get("Content-MD5") == "" && !hasChecksumHeader(r.h) {
		return errReply(http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: Content-MD5 or x-amz-checksum-*")
	}
	if rp := checkBodyDigests(r.h, r.body); rp != nil {
		return rp
	}
	if _, rp := sentChecksums(r.h, r.body); rp != nil {
		return rp
	}
	var req deleteRequest
	if err := xml.Unmarshal(r.body, &req); err != nil || len(req.Objects) == 0 || len(req.Objects) > 1000 {
		return errReply(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema")
	}
	var res deleteResult
	for _, o := range req.Objects {
		b.remove(o.Key)
		if !req.Quiet {
			res.Deleted = append(res.Deleted, deletedEntry{Key: o.Key})
		}
	}
	return xmlReply(res)
}

func hasChecksumHeader(h http.Header) bool {
	for _, alg := range algorithms {
		if h.Get(checksumHeader(alg)) != "" {
			return true
		}
	}
	return false
}

// pageSize is the number of entries a listing page holds: the request's
// max (default 1000), capped by the Fake's PageSize.
func (f *Fake) pageSize(r *request, param string) (int, *reply) {
	n := 1000
	if v := r.q.Get(param); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 0 {
			return 0, errReply(http.StatusBadRequest, "InvalidArgument", param+" must be a non-negative integer")
		}
		n = min(m, 1000)
	}
	return min(n, f.opts.PageSize), nil
}

func (f *Fake) listObjects(b *bucket, r *request) *reply {
	limit, rp := f.pageSize(r, "max-keys")
	if rp != nil {
		return rp
	}
	prefix, delim := r.q.Get("prefix"), r.q.Get("delimiter")
	res := listObjectsResult{
		Name: r.bucket, Prefix: prefix, Delimiter: delim, MaxKeys: limit,
		StartAfter: r.q.Get("start-after"), ContinuationToken: r.q.Get("continuation-token"),
	}
	after := res.StartAfter
	if tok := res.ContinuationToken; tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || !strings.HasPrefix(string(raw), "after:") {
			return errReply(http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect")
		}
		after = strings.TrimPrefix(string(raw), "after:")
	}
	last := ""
	for _, k := range b.keysFrom(prefix, after) {
		if !strings.HasPrefix(k, prefix) {
			break
		}
		if delim != "" && after != "" && strings.HasSuffix(after, delim) && strings.HasPrefix(k, after) {
			continue // under a common prefix listed on an earlier page
		}
		if cp := commonPrefixOf(k, prefix, delim); cp != "" {
			if cp == last {
				continue
			}
			if res.KeyCount == limit {
				res.IsTruncated = true
				break
			}
			res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: cp})
			res.KeyCount++
			last = cp
			continue
		}
		if res.KeyCount == limit {
			res.IsTruncated = true
			break
		}
		o := b.objects[k]
		lo := listedObject{Key: k, LastModified: isoTime(o.modified), ETag: o.etag, Size: o.size, StorageClass: "STANDARD"}
		for alg := range o.checksums {
			lo.ChecksumAlgorithm, lo.ChecksumType = alg, o.checksumType
		}
		if r.q.Get("fetch-owner") == "true" {
			lo.Owner = theOwner
		}
		res.Contents = append(res.Contents, lo)
		res.KeyCount++
		last = k
	}
	if res.IsTruncated {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte("after:" + last))
	}
	return xmlReply(res)
}

// commonPrefixOf is the common prefix key rolls up into under delim, or "".
func commonPrefixOf(key, prefix, delim string) string {
	if delim == "" {
		return ""
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delim)]
}

// chunksSize is the number of bytes in chunks.
func chunksSize(chunks [][]byte) int64 {
	var n int64
	for _, c := range chunks {
		n += int64(len(c))
	}
	return n
}

// rangeOf returns bytes [start, end) of the concatenation of chunks, as
// sub-slices of them (no copy).
func rangeOf(chunks [][]byte, start, end int64) [][]byte {
	var out [][]byte
	var at int64
	for _, c := range chunks {
		lo, hi := max(start-at, 0), min(end-at, int64(len(c)))
		if lo < hi {
			out = append(out, c[lo:hi])
		}
		at += int64(len(c))
	}
	return out
}
