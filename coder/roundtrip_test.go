package coder

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

func roundTripResume(t *testing.T, r recoverable.ResumeToken) []byte {
	t.Helper()
	enc, err := EncodeResumeToken(r)
	if err != nil {
		t.Fatalf("EncodeResumeToken: %v", err)
	}
	got, err := DecodeResumeToken(enc)
	if err != nil {
		t.Fatalf("DecodeResumeToken: %v", err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the token:\ngot  %+v\nwant %+v", got, r)
	}
	again, err := EncodeResumeToken(got)
	if err != nil || !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding gave other bytes (err %v)", err)
	}
	return enc
}

func roundTripCommit(t *testing.T, c recoverable.CommitToken) []byte {
	t.Helper()
	enc, err := EncodeCommitToken(c)
	if err != nil {
		t.Fatalf("EncodeCommitToken: %v", err)
	}
	got, err := DecodeCommitToken(enc)
	if err != nil {
		t.Fatalf("DecodeCommitToken: %v", err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip changed the token:\ngot  %+v\nwant %+v", got, c)
	}
	return enc
}

func TestRoundTripResume(t *testing.T) {
	base := resumeCases()[0].token
	tests := map[string]func(*recoverable.ResumeToken){
		"as is": func(*recoverable.ResumeToken) {},
		"no staging prefix": func(r *recoverable.ResumeToken) {
			r.StagingPrefix = ""
			r.Tail.Object = recoverable.SideObjectKey("", r.UploadID, r.Seq, "")
		},
		"side object with a nonce": func(r *recoverable.ResumeToken) {
			r.Tail.Object = recoverable.SideObjectKey(r.StagingPrefix, r.UploadID, r.Seq, "9f86d081")
		},
		"empty tail":           func(r *recoverable.ResumeToken) { r.Tail = recoverable.Tail{} },
		"one-byte inline tail": func(r *recoverable.ResumeToken) { r.Tail = recoverable.Tail{Len: 1, CRC: 7, Inline: []byte{0}} },
		"tail CRC zero":        func(r *recoverable.ResumeToken) { r.Tail.CRC = 0 },
		"unicode key":          func(r *recoverable.ResumeToken) { r.Key = "données/日本/🙂.csv" },
		"binary upload ID": func(r *recoverable.ResumeToken) {
			r.UploadID = "\x00\xff\n"
			r.Tail.Object = recoverable.SideObjectKey(r.StagingPrefix, r.UploadID, r.Seq, "")
		},
		"huge seq":             func(r *recoverable.ResumeToken) { r.Seq = ^uint64(0) },
		"one empty part":       func(r *recoverable.ResumeToken) { r.Parts = recoverable.PartList{Count: 1, Digest: [32]byte{1}} },
		"tail of a whole part": func(r *recoverable.ResumeToken) { r.Tail.Len = recoverable.MaxPartSize },
		"largest":              func(r *recoverable.ResumeToken) { *r = largestResume() },
		"largest, side object": func(r *recoverable.ResumeToken) {
			*r = largestResume()
			r.Tail.Inline = nil
			// A side-object key at its bound: the staging prefix fills what
			// the upload's folder and the name leave of MaxKeyLen.
			const nonce = "9f86d081"
			r.UploadID = "u"
			r.StagingPrefix = strings.Repeat("p", MaxKeyLen-len("/u/")-20-1-len(nonce))
			r.Tail.Object = recoverable.SideObjectKey(r.StagingPrefix, r.UploadID, r.Seq, nonce)
			if len(r.Tail.Object) != MaxKeyLen {
				panic("side-object key not at its bound")
			}
		},
		"smallest part size":    func(r *recoverable.ResumeToken) { r.PartSize = recoverable.MinPartSize },
		"most parts, one byte":  func(r *recoverable.ResumeToken) { r.Parts.Count = recoverable.MaxS3Parts; r.Parts.Bytes = 1 },
		"bucket of 255 bytes":   func(r *recoverable.ResumeToken) { r.Bucket = strings.Repeat("x", 255) },
		"key needs 2-byte size": func(r *recoverable.ResumeToken) { r.Key = strings.Repeat("k", 128) },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			r := base
			change(&r)
			roundTripResume(t, r)
		})
	}
}

func TestRoundTripCommit(t *testing.T) {
	base := commitCases()[0].token
	tests := map[string]func(*recoverable.CommitToken){
		"as is":             func(*recoverable.CommitToken) {},
		"no staging prefix": func(c *recoverable.CommitToken) { c.StagingPrefix = "" },
		"no parts":          func(c *recoverable.CommitToken) { c.Parts = recoverable.PartList{} },
		"one empty part":    func(c *recoverable.CommitToken) { c.Parts = recoverable.PartList{Count: 1} },
		"largest": func(c *recoverable.CommitToken) {
			l := largestResume()
			*c = recoverable.CommitToken{Bucket: l.Bucket, Key: l.Key, UploadID: l.UploadID, StagingPrefix: l.StagingPrefix, Parts: l.Parts}
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			c := base
			change(&c)
			roundTripCommit(t, c)
		})
	}
}

// An inline tail that is empty but not nil is no tail: it encodes like a nil one.
func TestEmptyInlineIsNoTail(t *testing.T) {
	r := resumeCases()[2].token // empty tail
	want, err := EncodeResumeToken(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Tail.Inline = []byte{}
	got, err := EncodeResumeToken(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("an empty non-nil Inline encodes differently from a nil one")
	}
	dec, err := DecodeResumeToken(got)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Tail.Inline != nil {
		t.Errorf("decoded Inline is %#v, want nil", dec.Tail.Inline)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	enc, err := EncodeResumeToken(resumeCases()[1].token) // inline
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResumeToken(enc)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(r.Tail.Inline)
	for i := range enc {
		enc[i] = 0xAA
	}
	if !bytes.Equal(r.Tail.Inline, want) {
		t.Error("the decoded inline tail changed with the input buffer")
	}
}

// TestEncodeRefuses checks that the encoder refuses what the decoder would
// refuse, so that nothing is written that cannot be read back.
func TestEncodeRefuses(t *testing.T) {
	base := resumeCases()[0].token
	long := func(n int) string { return strings.Repeat("x", n) }
	resume := []struct {
		name   string
		change func(*recoverable.ResumeToken)
		kind   error
	}{
		{"no bucket", func(r *recoverable.ResumeToken) { r.Bucket = "" }, ErrMalformed},
		{"no key", func(r *recoverable.ResumeToken) { r.Key = "" }, ErrMalformed},
		{"no upload ID", func(r *recoverable.ResumeToken) { r.UploadID = "" }, ErrMalformed},
		{"bucket too long", func(r *recoverable.ResumeToken) { r.Bucket = long(MaxBucketLen + 1) }, ErrTooLarge},
		{"key too long", func(r *recoverable.ResumeToken) { r.Key = long(MaxKeyLen + 1) }, ErrTooLarge},
		{"upload ID too long", func(r *recoverable.ResumeToken) { r.UploadID = long(MaxUploadIDLen + 1) }, ErrTooLarge},
		{"prefix too long", func(r *recoverable.ResumeToken) { r.StagingPrefix = long(MaxKeyLen + 1) }, ErrTooLarge},
		{"side object key too long", func(r *recoverable.ResumeToken) { r.Tail.Object = long(MaxKeyLen + 1) }, ErrTooLarge},
		{"part size zero", func(r *recoverable.ResumeToken) { r.PartSize = 0 }, ErrMalformed},
		{"part size below S3's", func(r *recoverable.ResumeToken) { r.PartSize = recoverable.MinPartSize - 1 }, ErrMalformed},
		{"part size above S3's", func(r *recoverable.ResumeToken) { r.PartSize = recoverable.MaxPartSize + 1 }, ErrMalformed},
		{"seq zero", func(r *recoverable.ResumeToken) { r.Seq = 0 }, ErrMalformed},
		{"negative count", func(r *recoverable.ResumeToken) { r.Parts.Count = -1 }, ErrMalformed},
		{"10,001 parts", func(r *recoverable.ResumeToken) { r.Parts.Count = recoverable.MaxS3Parts + 1 }, ErrTooLarge},
		{"negative part bytes", func(r *recoverable.ResumeToken) { r.Parts.Bytes = -1 }, ErrMalformed},
		{"parts too full", func(r *recoverable.ResumeToken) { r.Parts.Bytes = 2*recoverable.MaxPartSize + 1 }, ErrMalformed},
		{"bytes without parts", func(r *recoverable.ResumeToken) { r.Parts = recoverable.PartList{Bytes: 1} }, ErrMalformed},
		{"digest without parts", func(r *recoverable.ResumeToken) { r.Parts = recoverable.PartList{Digest: [32]byte{1}} }, ErrMalformed},
		{"CRC without parts", func(r *recoverable.ResumeToken) { r.Parts = recoverable.PartList{CRC: 1} }, ErrMalformed},
		{"negative tail", func(r *recoverable.ResumeToken) { r.Tail.Len = -1 }, ErrMalformed},
		{"tail above a part", func(r *recoverable.ResumeToken) { r.Tail.Len = recoverable.MaxPartSize + 1 }, ErrTooLarge},
		{"tail inline and object", func(r *recoverable.ResumeToken) { r.Tail.Inline = []byte("x"); r.Tail.Len = 1 }, ErrMalformed},
		{"tail object outside its upload", func(r *recoverable.ResumeToken) { r.Tail.Object = "warehouse/orders.parquet" }, ErrMalformed},
		{"tail object of another upload", func(r *recoverable.ResumeToken) {
			r.Tail.Object = recoverable.SideObjectKey(r.StagingPrefix, "other", r.Seq, "")
		}, ErrMalformed},
		{"tail object under another staging prefix", func(r *recoverable.ResumeToken) { r.StagingPrefix = "reports" }, ErrMalformed},
		{"tail object not named as side objects are", func(r *recoverable.ResumeToken) {
			r.Tail.Object = recoverable.SideObjectPrefix(r.StagingPrefix, r.UploadID) + "q1.csv"
		}, ErrMalformed},
		{"inline length mismatch", func(r *recoverable.ResumeToken) { r.Tail = recoverable.Tail{Len: 2, Inline: []byte("x")} }, ErrMalformed},
		{"inline too long", func(r *recoverable.ResumeToken) {
			r.Tail = recoverable.Tail{Len: MaxInlineTail + 1, Inline: make([]byte, MaxInlineTail+1)}
		}, ErrTooLarge},
		{"side object of nothing", func(r *recoverable.ResumeToken) { r.Tail.Len = 0 }, ErrMalformed},
		{"tail length but no bytes", func(r *recoverable.ResumeToken) { r.Tail = recoverable.Tail{Len: 5} }, ErrMalformed},
		{"tail CRC but no bytes", func(r *recoverable.ResumeToken) { r.Tail = recoverable.Tail{CRC: 5} }, ErrMalformed},
	}
	for _, tt := range resume {
		t.Run("resume/"+tt.name, func(t *testing.T) {
			r := base
			tt.change(&r)
			_, err := EncodeResumeToken(r)
			wantRefusal(t, err, tt.kind)
		})
	}
	commit := []struct {
		name   string
		change func(*recoverable.CommitToken)
		kind   error
	}{
		{"no bucket", func(c *recoverable.CommitToken) { c.Bucket = "" }, ErrMalformed},
		{"key too long", func(c *recoverable.CommitToken) { c.Key = long(MaxKeyLen + 1) }, ErrTooLarge},
		{"10,001 parts", func(c *recoverable.CommitToken) { c.Parts.Count = recoverable.MaxS3Parts + 1 }, ErrTooLarge},
		{"bytes without parts", func(c *recoverable.CommitToken) { c.Parts = recoverable.PartList{Bytes: 1} }, ErrMalformed},
	}
	for _, tt := range commit {
		t.Run("commit/"+tt.name, func(t *testing.T) {
			c := commitCases()[0].token
			tt.change(&c)
			_, err := EncodeCommitToken(c)
			wantRefusal(t, err, tt.kind)
		})
	}
}
