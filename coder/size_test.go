package coder

import (
	"fmt"
	"testing"

	"github.com/s3once/s3once/recoverable"
)

// sizedResume is a resume token of a stream that has uploaded n parts of 8 MiB
// and keeps its tail in a side object: the usual shape, with realistic names.
func sizedResume(n int) recoverable.ResumeToken {
	parts := make([]recoverable.Part, n)
	for i := range parts {
		parts[i] = recoverable.Part{
			Number: int32(i + 1),
			Size:   8 << 20,
			ETag:   fmt.Sprintf(`"%032x"`, i),
			CRC:    uint64(i) * 0x9E3779B97F4A7C15,
		}
	}
	const prefix, upload = recoverable.DefaultStagingPrefix, "2~hQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk"
	return recoverable.ResumeToken{
		Bucket:        "s3once-out",
		Key:           "events/dt=2026-11-29/shard-00003-of-00016/part-00000.jsonl",
		UploadID:      upload,
		PartSize:      8 << 20,
		StagingPrefix: prefix,
		Seq:           uint64(n + 1),
		Parts:         recoverable.Chain(parts),
		Tail: recoverable.Tail{
			Len:    3 << 20,
			CRC:    0x0123456789ABCDEF,
			Object: fmt.Sprintf("%s2%%7EhQ7xK3mZpV9dLr0sWb4TnYcE1fGuJiA.vT6oNq8yRk/%020d-9f86d081884c7d65", prefix, n+1),
		},
	}
}

// TestTokenSizeIsConstant checks invariant I7 through the encoding: a token of
// 10,000 parts is no larger than a token of one part, and under 1 KiB.
func TestTokenSizeIsConstant(t *testing.T) {
	var sizes []int
	for _, n := range []int{1, recoverable.MaxS3Parts} {
		r := sizedResume(n)
		enc, err := EncodeResumeToken(r)
		if err != nil {
			t.Fatal(err)
		}
		c, err := EncodeCommitToken(recoverable.CommitToken{
			Bucket: r.Bucket, Key: r.Key, UploadID: r.UploadID, StagingPrefix: r.StagingPrefix, Parts: r.Parts,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%5d parts: resume token %d bytes, commit token %d bytes", n, len(enc), len(c))
		if len(enc) >= 1024 || len(c) >= 1024 {
			t.Errorf("%d parts: tokens of %d and %d bytes, want under 1 KiB", n, len(enc), len(c))
		}
		sizes = append(sizes, len(enc), len(c))
	}
	if sizes[0] != sizes[2] || sizes[1] != sizes[3] {
		t.Errorf("token sizes grow with the part count: %v", sizes)
	}
}

// BenchmarkTokenSize encodes the token of a stream of 1 and of 10,000 parts
// and reports its size as token-bytes.
func BenchmarkTokenSize(b *testing.B) {
	for _, n := range []int{1, recoverable.MaxS3Parts} {
		r := sizedResume(n)
		b.Run(fmt.Sprintf("parts=%d", n), func(b *testing.B) {
			var size int
			b.ReportAllocs()
			for b.Loop() {
				enc, err := EncodeResumeToken(r)
				if err != nil {
					b.Fatal(err)
				}
				size = len(enc)
			}
			b.ReportMetric(float64(size), "token-bytes")
		})
	}
}

// BenchmarkDecodeResume measures decoding the token of a 10,000-part stream.
func BenchmarkDecodeResume(b *testing.B) {
	enc, err := EncodeResumeToken(sizedResume(recoverable.MaxS3Parts))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeResumeToken(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargestToken pins the size of the largest token the format allows, which
// FORMAT.md states.
func TestLargestToken(t *testing.T) {
	enc := roundTripResume(t, largestResume())
	if len(enc) != 68964 {
		t.Errorf("the largest resume token is %d bytes; update FORMAT.md", len(enc))
	}
}
