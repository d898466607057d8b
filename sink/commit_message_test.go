package sink

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/coder"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// TestKeyTakenMessage: when the commit stage finds other bytes at a file's
// key, its error says what happened and what to do (a fresh prefix when the
// input or the settings change), and nothing that is not so: no "commit
// after recovery" (nothing was recovered), no "another run or tool", no
// "inspect both" (this file's upload is gone by then). It carries the file's
// commit token in base64, which decodes to the token, and no upload is left.
func TestKeyTakenMessage(t *testing.T) {
	ctx := context.Background()
	bucket := srv.Bucket(t)
	c := testClient()
	st, err := testConfig(bucket, "out").settings()
	if err != nil {
		t.Fatal(err)
	}
	const key = "out/global-pane-0-shard-00000-of-00001-file-00000.txt"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("the first run's line\n"))}); err != nil {
		t.Fatal(err)
	}
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: recoverable.MinPartSize, StagingPrefix: st.StagingPrefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("a changed rerun's line\n")); err != nil {
		t.Fatal(err)
	}
	cr, err := s.CloseForCommit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := coder.EncodeCommitToken(cr)
	if err != nil {
		t.Fatal(err)
	}
	fn := &commitFn{S: st.folder}
	if err := fn.init(c); err != nil {
		t.Fatal(err)
	}
	err = fn.ProcessElement(ctx, pendingFile{Commit: tok, Result: FileResult{Bucket: bucket, Key: key}}, func(FileResult) { t.Error("a result was emitted") })
	var re *recoverable.Error
	if !errors.Is(err, committer.ErrKeyTaken) || !errors.As(err, &re) {
		t.Fatalf("commit stage: %v; want a typed ErrKeyTaken", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"fresh prefix", "s3once commit s3://" + bucket + "/" + key, "s3once inspect --base64"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q", want)
		}
	}
	for _, banned := range []string{"commit after recovery", "another run or tool", "inspect both"} {
		if strings.Contains(msg, banned) {
			t.Errorf("the message says %q", banned)
		}
	}
	m := regexp.MustCompile(`--base64: ([A-Za-z0-9+/=]+)`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatal("no base64 token in the message")
	}
	raw, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		t.Fatalf("%q is not base64: %v", m[1], err)
	}
	got, err := coder.DecodeCommitToken(raw)
	if err != nil || got.UploadID != cr.UploadID || got.Key != key {
		t.Fatalf("the message's token decodes to %+v, %v; want the file's", got, err)
	}
	if ups := s3test.Uploads(t, c, bucket); len(ups) > 0 {
		t.Fatalf("uploads left: %v", ups)
	}
	if got := s3test.Object(t, c, bucket, key); string(got) != "the first run's line\n" {
		t.Fatalf("the key now holds %q", got)
	}
}
