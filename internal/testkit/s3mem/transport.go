package s3mem

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/s3once/s3once/internal/testkit/s3fault"
)

// transport is the http.RoundTripper of one client: it hands each request to
// the Fake under the client's identity.
type transport struct {
	fake   *Fake
	client string
}

// request is a parsed S3 request.
type request struct {
	op          Op
	method      string
	bucket, key string
	q           url.Values
	h           http.Header
	body        []byte
	// lagged: a completion whose object shows only after VisibleLag.
	lagged bool
}

func (r *request) has(param string) bool { _, ok := r.q[param]; return ok }

// conditional reports whether the request is a write with a precondition
// (the kind S3 answers 409 when another is in flight for the same key).
func (r *request) conditional() bool {
	switch r.op {
	case s3fault.PutObject, s3fault.CompleteMultipartUpload:
		return r.h.Get("If-None-Match") != "" || r.h.Get("If-Match") != ""
	}
	return false
}

// reply is the server's answer, before it becomes an http.Response.
type reply struct {
	status int
	header http.Header
	body   []byte
	// chunks, if set, are the body instead: an object's bytes, served from
	// where they are stored.
	chunks [][]byte
	code   string // S3 error code, for error replies
}

func newReply(status int) *reply { return &reply{status: status, header: http.Header{}} }

// errReply is an S3 error answer with an XML body (dropped for HEAD).
func errReply(status int, code, msg string) *reply {
	r := newReply(status)
	r.code = code
	r.body = mustXML(errorBody{Code: code, Message: msg})
	r.header.Set("Content-Type", "application/xml")
	return r
}

// xmlReply is a 200 answer with v as its XML body.
func xmlReply(v any) *reply {
	r := newReply(http.StatusOK)
	r.body = mustXML(v)
	r.header.Set("Content-Type", "application/xml")
	return r
}

func mustXML(v any) []byte {
	b, err := xml.Marshal(v)
	if err != nil {
		// Only the package's own structs are marshalled: a failure is a bug here.
		panic(fmt.Sprintf("s3mem: marshal %T: %v", v, err))
	}
	return append([]byte(xml.Header), b...)
}

// parse reads what the Fake needs of an HTTP request.
func parse(req *http.Request, body []byte) *request {
	r := &request{method: req.Method, q: req.URL.Query(), h: req.Header, body: body}
	path := strings.TrimPrefix(req.URL.Path, "/")
	r.bucket, r.key, _ = strings.Cut(path, "/")
	r.op = route(r)
	return r
}

// route names the operation of a path-style request.
func route(r *request) Op {
	if r.bucket == "" {
		return Unsupported
	}
	if r.key == "" {
		switch r.method {
		case http.MethodPut:
			if len(r.q) == 0 {
				return CreateBucket
			}
		case http.MethodHead:
			return HeadBucket
		case http.MethodGet:
			switch {
			case r.has("uploads"):
				return s3fault.ListMultipartUploads
			case r.has("lifecycle"):
				return s3fault.GetBucketLifecycleConfiguration
			case r.q.Get("list-type") == "2":
				return s3fault.ListObjectsV2
			}
		case http.MethodPost:
			if r.has("delete") {
				return s3fault.DeleteObjects
			}
		}
		return Unsupported
	}
	for _, sub := range []string{"acl", "tagging", "attributes", "retention", "legal-hold", "torrent", "restore", "select"} {
		if r.has(sub) {
			return Unsupported
		}
	}
	if r.h.Get("x-amz-copy-source") != "" {
		return Unsupported
	}
	switch r.method {
	case http.MethodPut:
		if r.has("uploadId") && r.has("partNumber") {
			return s3fault.UploadPart
		}
		if !r.has("uploadId") && !r.has("partNumber") {
			return s3fault.PutObject
		}
	case http.MethodPost:
		switch {
		case r.has("uploads"):
			return s3fault.CreateMultipartUpload
		case r.has("uploadId"):
			return s3fault.CompleteMultipartUpload
		}
	case http.MethodDelete:
		if r.has("uploadId") {
			return s3fault.AbortMultipartUpload
		}
		return s3fault.DeleteObject
	case http.MethodGet:
		if r.has("uploadId") {
			return s3fault.ListParts
		}
		return s3fault.GetObject
	case http.MethodHead:
		return s3fault.HeadObject
	}
	return Unsupported
}

// attemptOf reads the SDK's attempt number from "attempt=2; max=3".
func attemptOf(h http.Header) int {
	for _, f := range strings.Split(h.Get("amz-sdk-request"), ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "attempt="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// RoundTrip serves one request: the dead-client check, the fault rules, the
// Gate, then the operation itself under the Fake's lock.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := readBody(req.Body, req.ContentLength)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("s3mem: read request body: %w", err)
		}
		body = b
	}
	ctx := req.Context()
	f := t.fake
	r := parse(req, body)
	c := Call{Client: t.client, Op: r.op, Bucket: r.bucket, Key: r.key, UploadID: r.q.Get("uploadId"), Attempt: attemptOf(req.Header)}
	if n, err := strconv.Atoi(r.q.Get("partNumber")); err == nil && r.op == s3fault.UploadPart {
		c.Part = int32(n)
	}

	f.mu.Lock()
	f.opCount[r.op]++
	c.Seq, c.N = len(f.calls)+1, f.opCount[r.op]
	idx := len(f.calls)
	if f.dead[t.client] {
		c.Dead = true
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		return nil, &crashError{t.client}
	}
	kind := f.pickFault(c)
	c.Fault = kind
	f.calls = append(f.calls, c)
	write := r.key != "" && (r.op == s3fault.PutObject || r.op == s3fault.CompleteMultipartUpload)
	wkey := r.bucket + "/" + r.key
	if write {
		f.inflight[wkey]++
	}
	f.mu.Unlock()

	if kind == 0 && f.opts.Gate != nil {
		k, err := f.opts.Gate(ctx, c)
		if err != nil {
			f.mu.Lock()
			if write {
				f.endWrite(wkey)
			}
			f.mu.Unlock()
			return nil, err
		}
		kind = k
	}

	f.mu.Lock()
	f.calls[idx].Fault = kind
	var rp *reply
	switch kind {
	case CrashBeforeSend:
		f.dead[t.client] = true
	case InternalError:
		rp = errReply(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case SlowDown:
		rp = errReply(http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case Conflict:
		rp = conflictReply()
	case Late:
		f.late[t.client] = append(f.late[t.client], lateRequest{r: r, idx: idx})
		rp = errReply(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case Hang:
	default:
		r.lagged = kind == CrashLagged
		if write && r.conditional() && f.inflight[wkey] > 1 {
			// Another write of this key is between its arrival and its
			// application: S3 refuses the conditional one applied first.
			f.conflicts++
			rp = conflictReply()
		} else {
			rp = f.apply(r)
			f.calls[idx].Applied = true
			if r.op == s3fault.PutObject && rp.status < 300 {
				f.landLate(t.client)
			}
		}
	}
	if write {
		f.endWrite(wkey)
	}
	if rp != nil {
		f.calls[idx].Status, f.calls[idx].Code = rp.status, rp.code
	}
	if kind == CrashBeforeSend || kind == CrashAfterApply || kind == CrashLagged || f.dead[t.client] {
		f.dead[t.client] = true
		f.mu.Unlock()
		return nil, &crashError{t.client}
	}
	var resp *http.Response
	if rp != nil {
		resp = f.response(req, rp)
	}
	f.mu.Unlock()
	if kind == Hang || kind == HangAfterApply {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return resp, nil
}

func conflictReply() *reply {
	return errReply(http.StatusConflict, "ConditionalRequestConflict", "A conflicting conditional operation is currently in progress against this resource. Please try again.")
}

// landLate applies the requests of client that met Late, in the order they
// came, under f.mu. Their replies went out long ago.
func (f *Fake) landLate(client string) {
	for _, l := range f.late[client] {
		f.apply(l.r)
		f.calls[l.idx].Applied = true
	}
	delete(f.late, client)
}

func (f *Fake) endWrite(key string) {
	if f.inflight[key]--; f.inflight[key] <= 0 {
		delete(f.inflight, key)
	}
}

// response turns a reply into an http.Response, with the headers every S3
// answer carries, under f.mu.
func (f *Fake) response(req *http.Request, rp *reply) *http.Response {
	h := rp.header
	id := f.nextID()
	h.Set("Date", f.now().Format(http.TimeFormat))
	h.Set("Server", "s3mem")
	h.Set("x-amz-request-id", fmt.Sprintf("S3MEM%011d", id))
	h.Set("x-amz-id-2", fmt.Sprintf("s3mem-host-%d", id))
	chunks := rp.chunks
	if chunks == nil {
		chunks = [][]byte{rp.body}
	}
	if req.Method == http.MethodHead {
		chunks = nil
	}
	if h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.FormatInt(chunksSize(chunks), 10))
	}
	n, _ := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", rp.status, http.StatusText(rp.status)),
		StatusCode:    rp.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(chunkReader(chunks)),
		ContentLength: n,
		Request:       req,
	}
}

// chunkReader reads the concatenation of chunks without copying them first.
func chunkReader(chunks [][]byte) io.Reader {
	if len(chunks) == 1 {
		return bytes.NewReader(chunks[0])
	}
	rs := make([]io.Reader, len(chunks))
	for i, c := range chunks {
		rs[i] = bytes.NewReader(c)
	}
	return io.MultiReader(rs...)
}
