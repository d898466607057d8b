package coder

import (
	"errors"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

// rawResume lays out a version-1 resume token with a side-object tail without
// any of the encoder's checks: what a damaged or tampered checkpoint may hold.
func rawResume(t *testing.T, r recoverable.ResumeToken) []byte {
	t.Helper()
	b, err := resumeFraming.Begin(1, 256)
	if err != nil {
		t.Fatal(err)
	}
	b = appendString(b, r.Bucket)
	b = appendString(b, r.Key)
	b = appendString(b, r.UploadID)
	b = appendString(b, r.StagingPrefix)
	b = appendU64(b, uint64(r.PartSize))
	b = appendU64(b, r.Seq)
	b = appendPartList(b, r.Parts)
	b = append(b, tailObject)
	b = appendU64(b, uint64(r.Tail.Len))
	b = appendU64(b, r.Tail.CRC)
	b = appendString(b, r.Tail.Object)
	out, err := resumeFraming.End(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDecodeRefusesForeignTailObject: a resume token whose tail names a key
// outside its upload's side-object folder does not decode, so it never
// reaches Recover (which would read the key) or Cleanup (which would delete
// it). The genuine token, laid out the same way, decodes to itself.
func TestDecodeRefusesForeignTailObject(t *testing.T) {
	base := resumeCases()[0].token
	if got, err := DecodeResumeToken(rawResume(t, base)); err != nil || got.Tail.Object != base.Tail.Object {
		t.Fatalf("the genuine token: %v", err)
	}
	for name, change := range map[string]func(*recoverable.ResumeToken){
		"a table of the warehouse": func(r *recoverable.ResumeToken) { r.Tail.Object = "warehouse/orders.parquet" },
		"prefix moved along": func(r *recoverable.ResumeToken) {
			r.StagingPrefix, r.Tail.Object = "warehouse/", "warehouse/orders.parquet"
		},
		"under reports/2024": func(r *recoverable.ResumeToken) {
			r.StagingPrefix, r.UploadID, r.Tail.Object = "reports", "2024", "reports/2024/q1.csv"
		},
		"a step up the path": func(r *recoverable.ResumeToken) {
			r.Tail.Object = recoverable.SideObjectPrefix(r.StagingPrefix, r.UploadID) + "../../orders.parquet"
		},
		"another upload's": func(r *recoverable.ResumeToken) {
			r.Tail.Object = recoverable.SideObjectKey(r.StagingPrefix, "other", r.Seq, "")
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := base
			change(&r)
			_, err := DecodeResumeToken(rawResume(t, r))
			if !errors.Is(err, recoverable.ErrInvalidToken) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeResumeToken = %v, want ErrInvalidToken and ErrMalformed", err)
			}
			if err := r.Validate(); !errors.Is(err, recoverable.ErrInvalidToken) {
				t.Fatalf("Validate = %v, want ErrInvalidToken", err)
			}
		})
	}
}
