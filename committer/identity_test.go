package committer_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/minio/crc64nvme"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

// forgeCRC returns bytes of d's length and CRC64NVME that differ from d: a
// text at the start, and the last 8 bytes chosen to restore the CRC. CRC is
// affine, so this is one 64x64 linear system over GF(2): no search.
func forgeCRC(t *testing.T, d []byte) []byte {
	t.Helper()
	n := len(d)
	if n < 64 {
		t.Fatal("too short to forge")
	}
	f := bytes.Clone(d)
	copy(f, "FORGED: NOT THE FILE THE PIPELINE WROTE")
	// L(x) = CRC(x) ^ CRC(zeros) is linear, and CRC(a^b) = CRC(a) ^ L(b):
	// find a change c of the last 8 bytes with L(c) = CRC(f) ^ CRC(d).
	buf := make([]byte, n)
	zero := crc64nvme.Checksum(buf)
	type row struct{ v, m uint64 } // v = L(combination m of unit bits)
	var basis [64]*row
	for i := 0; i < 64; i++ {
		buf[n-8+i/8] = 1 << (i % 8)
		r := &row{v: crc64nvme.Checksum(buf) ^ zero, m: 1 << i}
		buf[n-8+i/8] = 0
		for b := 63; b >= 0 && r.v != 0; b-- {
			if r.v>>b&1 == 0 {
				continue
			}
			if basis[b] == nil {
				basis[b] = r
				break
			}
			r.v ^= basis[b].v
			r.m ^= basis[b].m
		}
	}
	x, m := crc64nvme.Checksum(f)^crc64nvme.Checksum(d), uint64(0)
	for b := 63; b >= 0; b-- {
		if x>>b&1 == 0 {
			continue
		}
		if basis[b] == nil {
			t.Fatal("the last 8 bytes do not span the CRC")
		}
		x ^= basis[b].v
		m ^= basis[b].m
	}
	for i := 0; i < 64; i++ {
		if m>>i&1 == 1 {
			f[n-8+i/8] ^= 1 << (i % 8)
		}
	}
	if bytes.Equal(f, d) || crc64nvme.Checksum(f) != crc64nvme.Checksum(d) {
		t.Fatal("forgery failed")
	}
	return f
}

// An object placed at the key with the token's size and CRC64NVME but other
// bytes, uploaded in the same part layout, is ErrKeyTaken, not "already
// committed": the multipart ETag tells them apart where ETags are MD5s. The
// object is left alone and the token's upload aborted.
func TestForgedCRCIsKeyTaken(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name  string
		size  int
		after bool
	}{
		{"one-part/Commit", 4000, false},
		{"one-part/CommitAfterRecovery", 4000, true},
		{"two-parts/Commit", 6 << 20, false},
		{"two-parts/CommitAfterRecovery", 6 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "out/forged-" + tc.name
			data := payload(800, tc.size)
			forged := forgeCRC(t, data)
			theirs := e.write(k, forged, 0)
			if _, err := newCommitter(t, e.client, committer.Options{}).Commit(context.Background(), theirs); err != nil {
				t.Fatal(err)
			}
			cr := e.write(k, data, 0)
			if cr.Size() != theirs.Size() || cr.CRC() != theirs.CRC() || cr.Parts.Count != theirs.Parts.Count {
				t.Fatal("the forgery does not look like the file")
			}
			c := newCommitter(t, e.client, committer.Options{})
			commit := c.Commit
			if tc.after {
				commit = c.CommitAfterRecovery
			}
			res, err := commit(context.Background(), cr)
			if !errors.Is(err, committer.ErrKeyTaken) {
				t.Fatalf("want ErrKeyTaken, got %+v %v", res, err)
			}
			if re := mustBeTyped(t, err, cr); re.Hint == "" {
				t.Fatal("no hint")
			}
			e.mustHold(k, forged)
			if e.uploadExists(cr) {
				t.Fatal("the token's upload is still open")
			}
		})
	}
}

// The same bytes written again with another PartSize make another multipart
// ETag of the same part count: still "already committed", never ErrKeyTaken.
// With the same PartSize the ETags are equal.
func TestSameBytesOtherPartSizeIsCommitted(t *testing.T) {
	e := newEnv(t)
	data := payload(810, 11<<20) // 3 parts of 5 MiB and of 5 MiB + 4 KiB
	for _, tc := range []struct {
		name         string
		first, again int64
	}{
		{"same-part-size", recoverable.MinPartSize, recoverable.MinPartSize},
		{"other-part-size", recoverable.MinPartSize, recoverable.MinPartSize + 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "out/partsize-" + tc.name
			first := writeWith(t, e.client, e.bucket, k, data, 0, recoverable.Options{PartSize: tc.first})
			if _, err := newCommitter(t, e.client, committer.Options{}).Commit(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			again := writeWith(t, e.client, e.bucket, k, data, 1, recoverable.Options{PartSize: tc.again})
			if again.Parts.Count != first.Parts.Count {
				t.Fatalf("part counts %d and %d: the test needs them equal", first.Parts.Count, again.Parts.Count)
			}
			c := newCommitter(t, e.client, committer.Options{})
			for _, commit := range []func(context.Context, recoverable.CommitToken) (committer.Result, error){c.Commit, c.CommitAfterRecovery} {
				res, err := commit(context.Background(), again)
				if err != nil || !res.AlreadyCommitted {
					t.Fatalf("%+v %v", res, err)
				}
			}
			e.mustHold(k, data)
		})
	}
}

// The preflight probe tells whether the bucket's ETags are MD5s.
func TestPreflightLearnsWhetherETagsAreMD5s(t *testing.T) {
	e := newEnv(t)
	res, err := newCommitter(t, e.client, committer.Options{}).Preflight(context.Background(), e.bucket, "")
	if err != nil || !res.ETagsAreMD5 {
		t.Fatalf("plain bucket: %+v %v", res, err)
	}
	kms := s3mem.New(s3mem.Options{RandomETags: true}) // as under SSE-KMS
	client := kms.NewClient(s3mem.ClientOptions{})
	res, err = newCommitter(t, client, committer.Options{}).Preflight(context.Background(), kms.Bucket(), "")
	if err != nil || res.ETagsAreMD5 || !res.ConditionalWrites {
		t.Fatalf("bucket with non-MD5 ETags: %+v %v", res, err)
	}
}
