package s3mem

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// upload is a multipart upload in progress.
type upload struct {
	id           string
	seq          int64 // creation order, for listings
	key          string
	initiated    time.Time
	algorithm    string // "" when created without one
	checksumType string
	contentType  string
	encoding     string
	parts        map[int32]*part
}

type part struct {
	number    int32
	data      []byte
	etag      string
	md5       [16]byte
	modified  time.Time
	checksums checksums
}

func noSuchUpload() *reply {
	return errReply(http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
}

// findUpload returns the upload the request names, if it is of the request's key.
func findUpload(b *bucket, r *request) *upload {
	u := b.uploads[r.q.Get("uploadId")]
	if u == nil || u.key != r.key {
		return nil
	}
	return u
}

func (f *Fake) createUpload(b *bucket, r *request) *reply {
	u := &upload{key: r.key, initiated: f.now(), contentType: r.h.Get("Content-Type"), encoding: r.h.Get("Content-Encoding"), parts: map[int32]*part{}}
	if v := r.h.Get("x-amz-checksum-algorithm"); v != "" {
		u.algorithm = knownAlgorithm(v)
		if u.algorithm == "" {
			return errReply(http.StatusBadRequest, "InvalidRequest", "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
		}
		u.checksumType = composite
		if u.algorithm == "CRC64NVME" {
			u.checksumType = fullObject
		}
	}
	if v := r.h.Get("x-amz-checksum-type"); v != "" {
		v = strings.ToUpper(v)
		switch {
		case u.algorithm == "":
			return errReply(http.StatusBadRequest, "InvalidRequest", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
		case v != fullObject && v != composite:
			return errReply(http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-type header is invalid.")
		case v == composite && u.algorithm == "CRC64NVME", v == fullObject && strings.HasPrefix(u.algorithm, "SHA"):
			return errReply(http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("The %s checksum type cannot be used with the %s checksum algorithm.", v, u.algorithm))
		}
		u.checksumType = v
	}
	u.seq = f.nextID()
	u.id = fmt.Sprintf("s3mem-upload-%08d", u.seq)
	b.uploads[u.id] = u
	rp := xmlReply(initiateResult{Bucket: r.bucket, Key: r.key, UploadID: u.id})
	if u.algorithm != "" {
		rp.header.Set("x-amz-checksum-algorithm", u.algorithm)
		rp.header.Set("x-amz-checksum-type", u.checksumType)
	}
	return rp
}

func (f *Fake) uploadPart(b *bucket, r *request) *reply {
	u := findUpload(b, r)
	if u == nil {
		return noSuchUpload()
	}
	n, err := strconv.Atoi(r.q.Get("partNumber"))
	if err != nil || n < 1 || n > int(f.opts.MaxParts) {
		return errReply(http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("Part number must be an integer between 1 and %d, inclusive", f.opts.MaxParts))
	}
	if rp := checkBodyDigests(r.h, r.body); rp != nil {
		return rp
	}
	cs, rp := sentChecksums(r.h, r.body)
	if rp != nil {
		return rp
	}
	if u.algorithm != "" {
		for alg := range cs {
			if alg != u.algorithm {
				return errReply(http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s", strings.ToLower(u.algorithm), strings.ToLower(alg)))
			}
		}
		if cs[u.algorithm] == "" {
			cs[u.algorithm] = checksum(u.algorithm, r.body)
		}
	}
	p := &part{number: int32(n), data: r.body, md5: md5.Sum(r.body), modified: f.now(), checksums: cs}
	p.etag = `"` + hex.EncodeToString(p.md5[:]) + `"`
	if f.opts.RandomETags {
		p.etag = f.etag(nil)
	}
	u.parts[p.number] = p
	rp = newReply(http.StatusOK)
	rp.header.Set("ETag", p.etag)
	for alg, v := range cs {
		rp.header.Set(checksumHeader(alg), v)
	}
	return rp
}

func (f *Fake) listParts(b *bucket, r *request) *reply {
	u := findUpload(b, r)
	if u == nil {
		return noSuchUpload()
	}
	limit, rp := f.pageSize(r, "max-parts")
	if rp != nil {
		return rp
	}
	marker := 0
	if v := r.q.Get("part-number-marker"); v != "" {
		if marker, _ = strconv.Atoi(v); marker < 0 {
			marker = 0
		}
	}
	nums := make([]int32, 0, len(u.parts))
	for n := range u.parts {
		if int(n) > marker {
			nums = append(nums, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	res := listPartsResult{
		Bucket: r.bucket, Key: r.key, UploadID: u.id, PartNumberMarker: int32(marker), MaxParts: limit,
		Initiator: theOwner, Owner: theOwner, StorageClass: "STANDARD",
		ChecksumAlgorithm: u.algorithm, ChecksumType: u.checksumType,
	}
	for _, n := range nums {
		if len(res.Parts) == limit {
			res.IsTruncated = true
			break
		}
		p := u.parts[n]
		res.Parts = append(res.Parts, listedPart{PartNumber: n, LastModified: isoTime(p.modified), ETag: p.etag, Size: int64(len(p.data)), checksumFields: fieldsOf(p.checksums)})
		res.NextPartNumberMarker = n
	}
	if !res.IsTruncated {
		res.NextPartNumberMarker = 0
	}
	return xmlReply(res)
}

func (f *Fake) completeUpload(b *bucket, r *request) *reply {
	u := findUpload(b, r)
	if u == nil {
		return noSuchUpload()
	}
	var req completeRequest
	if err := xml.Unmarshal(r.body, &req); err != nil || len(req.Parts) == 0 {
		return errReply(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema")
	}
	parts := make([]*part, 0, len(req.Parts))
	var size int64
	for i, rp := range req.Parts {
		if i > 0 && rp.PartNumber <= req.Parts[i-1].PartNumber {
			return errReply(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.")
		}
		p := u.parts[rp.PartNumber]
		if p == nil || strings.Trim(rp.ETag, `"`) != strings.Trim(p.etag, `"`) {
			return errReply(http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
		}
		for _, alg := range algorithms {
			if v := rp.get(alg); v != "" && v != p.checksums[alg] {
				return errReply(http.StatusBadRequest, "InvalidPart", fmt.Sprintf("One or more of the specified parts could not be found. The part may not have been uploaded, or the specified %s checksum may not match the part's checksum.", alg))
			}
		}
		parts = append(parts, p)
		size += int64(len(p.data))
	}
	for _, p := range parts[:len(parts)-1] {
		if int64(len(p.data)) < f.opts.MinPartSize {
			return errReply(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
		}
	}
	if v := r.h.Get("x-amz-mp-object-size"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n != size {
			return errReply(http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("The provided 'x-amz-mp-object-size' header value %s does not match what was computed: %d", v, size))
		}
	}
	// The object shares its parts' bytes: they never change once stored,
	// and nothing copies 5 MiB parts into one buffer.
	data := make([][]byte, len(parts))
	for i, p := range parts {
		data[i] = p.data
	}
	o := &object{chunks: data, size: size, modified: f.now(), checksums: checksums{}, parts: parts, contentType: u.contentType, encoding: u.encoding}
	alg := u.algorithm
	switch {
	case alg == "":
		// As for single writes, S3 gives the object a CRC64NVME of its own.
		o.checksums["CRC64NVME"], o.checksumType = checksumOf("CRC64NVME", data), fullObject
	case u.checksumType == fullObject:
		o.checksums[alg], o.checksumType = checksumOf(alg, data), fullObject
	default:
		o.checksums[alg], o.checksumType = compositeChecksum(alg, parts), composite
	}
	for _, a := range algorithms {
		v := r.h.Get(checksumHeader(a))
		if v == "" {
			continue
		}
		if a != alg {
			return errReply(http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("The upload was created using the %s checksum algorithm; the completion sent %s.", alg, a))
		}
		if v != o.checksums[a] {
			return errReply(http.StatusBadRequest, "BadDigest", fmt.Sprintf("The %s you specified for the full object did not match what was calculated.", a))
		}
	}
	if rp := precondition(r, b.objects[r.key]); rp != nil {
		return rp
	}
	if f.opts.RandomETags {
		o.etag = f.etag(nil)
	} else {
		o.etag = multipartETag(parts)
	}
	if r.lagged {
		b.lagged[r.key] = laggedObject{o: o, at: f.now().Add(f.opts.VisibleLag)}
	} else {
		b.put(r.key, o)
	}
	delete(b.uploads, u.id)
	res := completeResult{
		Location: fmt.Sprintf("%s/%s/%s", Endpoint, r.bucket, r.key), Bucket: r.bucket, Key: r.key, ETag: o.etag,
		checksumFields: fieldsOf(o.checksums), ChecksumType: o.checksumType,
	}
	return xmlReply(res)
}

func (f *Fake) listUploads(b *bucket, r *request) *reply {
	limit, rp := f.pageSize(r, "max-uploads")
	if rp != nil {
		return rp
	}
	prefix, keyMarker, idMarker := r.q.Get("prefix"), r.q.Get("key-marker"), r.q.Get("upload-id-marker")
	var afterSeq int64 = -1
	if m := b.uploads[idMarker]; idMarker != "" && m != nil && m.key == keyMarker {
		afterSeq = m.seq
	}
	var ups []*upload
	for _, u := range b.uploads {
		if !strings.HasPrefix(u.key, prefix) {
			continue
		}
		if keyMarker != "" && (u.key < keyMarker || u.key == keyMarker && (afterSeq < 0 || u.seq <= afterSeq)) {
			continue
		}
		ups = append(ups, u)
	}
	sort.Slice(ups, func(i, j int) bool {
		if ups[i].key != ups[j].key {
			return ups[i].key < ups[j].key
		}
		return ups[i].seq < ups[j].seq
	})
	res := listUploadsResult{Bucket: r.bucket, KeyMarker: keyMarker, UploadIDMarker: idMarker, Prefix: prefix, MaxUploads: limit}
	for _, u := range ups {
		if len(res.Uploads) == limit {
			res.IsTruncated = true
			break
		}
		res.Uploads = append(res.Uploads, listedUpload{
			Key: u.key, UploadID: u.id, Initiator: theOwner, Owner: theOwner, StorageClass: "STANDARD",
			Initiated: isoTime(u.initiated), ChecksumAlgorithm: u.algorithm, ChecksumType: u.checksumType,
		})
	}
	if res.IsTruncated {
		last := res.Uploads[len(res.Uploads)-1]
		res.NextKeyMarker, res.NextUploadIDMarker = last.Key, last.UploadID
	}
	return xmlReply(res)
}
