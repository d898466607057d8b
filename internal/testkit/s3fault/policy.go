package s3fault

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Policy is an HTTP client for an S3 client (s3.Options.HTTPClient) that
// refuses requests as an AWS bucket policy and ownership check would, for
// servers that enforce neither:
//
//   - Owner: every request whose x-amz-expected-bucket-owner header is not
//     Owner gets 403 AccessDenied, as S3 answers a request naming an
//     account that does not own the bucket. A request without the header
//     passes (S3 does not require it).
//   - RequireEncryption: a PutObject or CreateMultipartUpload whose
//     x-amz-server-side-encryption header is not this value (or, for
//     "SSE-C", that carries no x-amz-server-side-encryption-customer-key)
//     gets 403 AccessDenied, as under the usual "deny unencrypted uploads"
//     bucket policy. Other calls pass.
//
// Refused requests never reach the server. Every refusal is counted.
type Policy struct {
	Owner             string
	RequireEncryption string
	// Next sends the requests that pass; nil means http.DefaultClient.
	Next s3.HTTPClient

	mu      sync.Mutex
	refused []string
	seen    []http.Header
}

// RequireSSEC is Policy.RequireEncryption's value for SSE-C.
const RequireSSEC = "SSE-C"

// Do implements s3.HTTPClient.
func (p *Policy) Do(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.seen = append(p.seen, r.Header.Clone())
	p.mu.Unlock()
	if o := r.Header.Get("x-amz-expected-bucket-owner"); o != "" && p.Owner != "" && o != p.Owner {
		return p.refuse(r, "the bucket's owner is not "+o)
	}
	if p.RequireEncryption != "" && writesObject(r) {
		ok := r.Header.Get("x-amz-server-side-encryption") == p.RequireEncryption
		if p.RequireEncryption == RequireSSEC {
			ok = r.Header.Get("x-amz-server-side-encryption-customer-key") != ""
		}
		if !ok {
			return p.refuse(r, "the bucket policy denies uploads without "+p.RequireEncryption)
		}
	}
	next := p.Next
	if next == nil {
		next = http.DefaultClient
	}
	return next.Do(r)
}

// writesObject tells PutObject (PUT of a key without partNumber, not a copy)
// and CreateMultipartUpload (POST ?uploads) apart from other calls, in path
// style: /<bucket>/<key>.
func writesObject(r *http.Request) bool {
	path := strings.TrimPrefix(r.URL.Path, "/")
	_, key, _ := strings.Cut(path, "/")
	if key == "" {
		return false
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		return !q.Has("partNumber") && !q.Has("uploadId") && !q.Has("tagging") && r.Header.Get("x-amz-copy-source") == ""
	case http.MethodPost:
		return q.Has("uploads")
	}
	return false
}

func (p *Policy) refuse(r *http.Request, why string) (*http.Response, error) {
	p.mu.Lock()
	p.refused = append(p.refused, r.Method+" "+r.URL.Path+": "+why)
	p.mu.Unlock()
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied (%s)</Message><RequestId>s3fault</RequestId></Error>`, why)
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	return &http.Response{
		Status: "403 Forbidden", StatusCode: http.StatusForbidden, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: r,
	}, nil
}

// Refused lists the refused requests, in order.
func (p *Policy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// Seen returns the headers of every request, refused or not, in order.
func (p *Policy) Seen() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.seen...)
}
