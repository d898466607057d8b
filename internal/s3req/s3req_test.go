package s3req_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/s3req"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/recoverable"
)

// versitygw checks ExpectedBucketOwner against the bucket's owner, its
// account's access key ID; AWS against the 12-digit account ID.
const (
	owner = s3test.AccessKey
	other = "444455556666"
	// kmsKey is MinIO's static KMS key: "<name>:<base64 of 32 bytes>".
	kmsKeyName = "s3once-test-key"
	kmsKey     = kmsKeyName + ":dGhpcnR5LXR3by1ieXRlLWtleS1mb3ItczNvbmNlISE="
)

// client is an S3 client for srv (or a TLS endpoint) carrying settings,
// sending through httpc.
func client(endpoint string, settings s3req.Settings, httpc s3.HTTPClient) *s3.Client {
	return s3.New(s3.Options{
		Region: s3test.Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		RetryMaxAttempts: 1, HTTPClient: httpc,
	}, settings.Apply)
}

// writeFile writes one file the way the sink does: a part, a persist whose
// tail goes to a side object, a recovery, the tail as the last part, a
// commit (with its HEAD) and the clean-up. It returns the key and the side
// object's key, read before the commit removed it (its headers in side).
func writeFile(t *testing.T, c *s3.Client, bucket string, side func(key string)) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	w, err := recoverable.NewWriter(c, recoverable.Options{PartSize: 5 << 20, InlineTailMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	key := "out/global-pane-0-shard-00000-of-00001-file-00000.txt"
	data := make([]byte, 5<<20+4321)
	_, _ = rand.Read(data)
	st, err := w.Open(ctx, bucket, key, recoverable.ObjectOptions{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := st.Write(data); err != nil {
		t.Fatalf("write: %v", err)
	}
	rr, err := st.Persist(ctx)
	if err != nil {
		t.Fatalf("persist: %v", err)
	}
	if rr.Tail.Object == "" {
		t.Fatalf("the tail went inline; the test needs a side object")
	}
	if side != nil {
		side(rr.Tail.Object)
	}
	_ = st.Dispose(ctx)
	cr, err := w.RecoverForCommit(ctx, rr)
	if err != nil {
		t.Fatalf("recover for commit: %v", err)
	}
	cm, err := committer.New(c, committer.Options{StagingPrefix: recoverable.DefaultStagingPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Commit(ctx, cr); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return key, data
}

func read(t *testing.T, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b.Bytes()
}

// TestEveryCallNamesTheOwner: a whole file's life (create, part, side
// object put and get, list parts, complete, HEAD, delete) through a client
// with ExpectedBucketOwner: every request carries the owner; a client naming
// another owner is refused on its first call and writes nothing.
func TestEveryCallNamesTheOwner(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	pol := &s3fault.Policy{Owner: owner}
	c := client(srv.Endpoint(), s3req.Settings{ExpectedBucketOwner: owner}, pol)
	key, data := writeFile(t, c, bucket, nil)
	if got := read(t, c, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
	}
	seen := pol.Seen()
	if len(seen) < 8 {
		t.Fatalf("only %d requests seen", len(seen))
	}
	for i, h := range seen {
		if got := h.Get("x-amz-expected-bucket-owner"); got != owner {
			t.Errorf("request %d carries owner %q, want %q", i, got, owner)
		}
	}

	wrong := &s3fault.Policy{Owner: owner}
	cw := client(srv.Endpoint(), s3req.Settings{ExpectedBucketOwner: other}, wrong)
	w, err := recoverable.NewWriter(cw, recoverable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Open(context.Background(), bucket, "out/other", recoverable.ObjectOptions{})
	if s3call.APICode(err) != "AccessDenied" {
		t.Fatalf("open under another owner: %v, want AccessDenied", err)
	}
	if up := s3test.Uploads(t, srv.Client(s3test.ClientOptions{}), bucket); len(up) != 0 {
		t.Errorf("uploads made under the wrong owner: %v", up)
	}
}

// TestCallerInputUntouched: the settings go on a copy of each input; the
// caller's struct is never written to (inputs may be shared or reused).
func TestCallerInputUntouched(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	c := client(srv.Endpoint(), s3req.Settings{ExpectedBucketOwner: owner, Encryption: s3req.SSES3, StorageClass: "STANDARD"}, nil)
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("k")}
	out, err := c.CreateMultipartUpload(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	defer c.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: in.Bucket, Key: in.Key, UploadId: out.UploadId})
	if in.ExpectedBucketOwner != nil || in.ServerSideEncryption != "" || in.StorageClass != "" {
		t.Fatalf("the caller's input was changed: owner %v, SSE %q, class %q", in.ExpectedBucketOwner, in.ServerSideEncryption, in.StorageClass)
	}
}

// TestSSEKMSOnMinIO: with Encryption aws:kms and a key ID, the final object
// and the side object are encrypted with that key, on a real KMS-enabled
// server; the file reads back byte-exact.
func TestSSEKMSOnMinIO(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO, KMSSecretKey: kmsKey})
	bucket := srv.Bucket(t)
	c := client(srv.Endpoint(), s3req.Settings{Encryption: s3req.SSEKMS, KMSKeyID: kmsKeyName}, nil)
	ctx := context.Background()
	checkKMS := func(what, key string) {
		t.Helper()
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("head %s: %v", what, err)
		}
		if h.ServerSideEncryption != types.ServerSideEncryptionAwsKms || !strings.Contains(aws.ToString(h.SSEKMSKeyId), kmsKeyName) {
			t.Errorf("%s: encryption %q with key %q, want aws:kms with %s", what, h.ServerSideEncryption, aws.ToString(h.SSEKMSKeyId), kmsKeyName)
		}
	}
	key, data := writeFile(t, c, bucket, func(side string) { checkKMS("side object", side) })
	checkKMS("file", key)
	if got := read(t, c, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
	}
}

// TestSSES3OnMinIO: Encryption AES256 gives SSE-S3 objects.
func TestSSES3OnMinIO(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO, KMSSecretKey: kmsKey})
	bucket := srv.Bucket(t)
	c := client(srv.Endpoint(), s3req.Settings{Encryption: s3req.SSES3}, nil)
	key, data := writeFile(t, c, bucket, nil)
	h, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if h.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Errorf("file encryption %q, want AES256", h.ServerSideEncryption)
	}
	if got := read(t, c, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("read back differs")
	}
}

// TestPolicyRequiringEncryption: a bucket whose policy refuses uploads
// without aws:kms refuses the plain client's first upload and takes the
// configured one's.
func TestPolicyRequiringEncryption(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	plain := client(srv.Endpoint(), s3req.Settings{}, &s3fault.Policy{RequireEncryption: s3req.SSEKMS})
	w, _ := recoverable.NewWriter(plain, recoverable.Options{})
	if _, err := w.Open(ctx, bucket, "out/k", recoverable.ObjectOptions{}); s3call.APICode(err) != "AccessDenied" {
		t.Fatalf("plain upload: %v, want AccessDenied", err)
	}
	// versitygw has no KMS: the policy passes the request, and the server
	// ignores the header it cannot act on.
	pol := &s3fault.Policy{RequireEncryption: s3req.SSEKMS}
	enc := client(srv.Endpoint(), s3req.Settings{Encryption: s3req.SSEKMS}, pol)
	w, _ = recoverable.NewWriter(enc, recoverable.Options{})
	st, err := w.Open(ctx, bucket, "out/k", recoverable.ObjectOptions{})
	if err != nil && s3call.APICode(err) == "AccessDenied" {
		t.Fatalf("encrypted upload refused: %v", err)
	}
	if st != nil {
		_ = st.Dispose(ctx)
	}
	if r := pol.Refused(); len(r) != 0 {
		t.Errorf("refused: %v", r)
	}
}

func TestValidate(t *testing.T) {
	key, _ := s3req.NewCustomerKey(bytes.Repeat([]byte{7}, 32))
	for _, tc := range []struct {
		name string
		s    s3req.Settings
		want string // "" means valid
	}{
		{"zero", s3req.Settings{}, ""},
		{"everything", s3req.Settings{ExpectedBucketOwner: owner, Encryption: s3req.SSEKMS, KMSKeyID: "k", BucketKey: true,
			StorageClass: "STANDARD_IA", Tags: map[string]string{"team": "data"}, CacheControl: "no-cache",
			ContentDisposition: "attachment", Metadata: map[string]string{"origin": "s3once"}}, ""},
		{"owner", s3req.Settings{ExpectedBucketOwner: "1234 5"}, "account ID"},
		{"mode", s3req.Settings{Encryption: "aes"}, `Encryption "aes"`},
		{"key without kms", s3req.Settings{Encryption: s3req.SSES3, KMSKeyID: "k"}, "KMSKeyID needs"},
		{"bucket key", s3req.Settings{BucketKey: true}, "BucketKey needs"},
		{"sse-c and kms", s3req.Settings{Encryption: s3req.SSEKMS, CustomerKey: key}, "exclude each other"},
		{"class", s3req.Settings{StorageClass: "COLD"}, "StorageClass"},
		{"tags", s3req.Settings{Tags: map[string]string{"aws:x": "y"}}, "tag key"},
		{"tag text", s3req.Settings{Tags: map[string]string{"tier": "a&b"}}, "refuses in tags"},
		{"meta", s3req.Settings{Metadata: map[string]string{"a b": "c"}}, "Metadata name"},
		{"cr", s3req.Settings{CacheControl: "a\r\nb"}, "line break"},
	} {
		err := tc.s.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, s3req.ErrInvalid)):
			t.Errorf("%s: %v, want an ErrInvalid naming %q", tc.name, err, tc.want)
		}
	}
}

// TestCustomerKeyNeverPrints: neither the key nor its base64 shows in any
// formatting of the settings.
func TestCustomerKeyNeverPrints(t *testing.T) {
	raw := []byte("0123456789abcdef0123456789abcdef")
	k, err := s3req.NewCustomerKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := s3req.Settings{CustomerKey: k}
	b64 := base64.StdEncoding.EncodeToString(raw)
	shows := func(out string) bool {
		return strings.Contains(out, string(raw)) || strings.Contains(out, b64) || strings.Contains(out, fmt.Sprintf("%x", b64))
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q", "%d"} {
		for _, v := range []any{s, k, &k} {
			if out := fmt.Sprintf(f, v); shows(out) {
				t.Errorf("%s of %T shows the key: %s", f, v, out)
			}
		}
	}
	var log bytes.Buffer
	slog.New(slog.NewJSONHandler(&log, nil)).Info("settings", "key", k, "settings", s)
	if j, err := json.Marshal(s); err != nil || shows(string(j)) || shows(log.String()) {
		t.Errorf("JSON or a log line shows the key: %s %v; %s", j, err, log.String())
	}
}

func TestLoadCustomerKey(t *testing.T) {
	raw := bytes.Repeat([]byte{9}, 32)
	b64 := base64.StdEncoding.EncodeToString(raw)
	want, _ := s3req.NewCustomerKey(raw)
	t.Setenv("S3ONCE_TEST_SSEC", b64)
	dir := t.TempDir()
	rawFile, b64File, bad := filepath.Join(dir, "raw"), filepath.Join(dir, "b64"), filepath.Join(dir, "bad")
	_ = os.WriteFile(rawFile, raw, 0o600)
	_ = os.WriteFile(b64File, []byte(b64+"\n"), 0o600)
	_ = os.WriteFile(bad, []byte("short"), 0o600)
	for _, tc := range []struct {
		env, file string
		ok        bool
	}{
		{"S3ONCE_TEST_SSEC", "", true}, {"", rawFile, true}, {"", b64File, true},
		{"S3ONCE_TEST_UNSET", "", false}, {"", bad, false}, {"", filepath.Join(dir, "none"), false},
		{"S3ONCE_TEST_SSEC", rawFile, false},
	} {
		k, err := s3req.LoadCustomerKey(tc.env, tc.file)
		if tc.ok && (err != nil || k.MD5() != want.MD5()) {
			t.Errorf("%q %q: %v, key MD5 %s want %s", tc.env, tc.file, err, k.MD5(), want.MD5())
		}
		if !tc.ok && !errors.Is(err, s3req.ErrInvalid) {
			t.Errorf("%q %q: %v, want ErrInvalid", tc.env, tc.file, err)
		}
	}
	if k, err := s3req.LoadCustomerKey("", ""); err != nil || k.IsSet() {
		t.Errorf("no source: %v, set %v", err, k.IsSet())
	}
}

// TestObjectSettings: storage class, tags, Cache-Control,
// Content-Disposition and user metadata set at CreateMultipartUpload reach
// the committed file, on a real server.
func TestObjectSettings(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{Kind: s3test.MinIO})
	bucket := srv.Bucket(t)
	ctx := context.Background()
	set := s3req.Settings{
		StorageClass: "REDUCED_REDUNDANCY", Tags: map[string]string{"team": "data eng", "tier": "gold+1"},
		CacheControl: "max-age=60", ContentDisposition: `attachment; filename="x.txt"`,
		Metadata: map[string]string{"origin": "s3once", "run": "42"},
	}
	c := client(srv.Endpoint(), set, nil)
	key, _ := writeFile(t, c, bucket, nil)
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(h.StorageClass); got != set.StorageClass {
		t.Errorf("storage class %q, want %q", got, set.StorageClass)
	}
	if aws.ToString(h.CacheControl) != set.CacheControl || aws.ToString(h.ContentDisposition) != set.ContentDisposition {
		t.Errorf("Cache-Control %q, Content-Disposition %q", aws.ToString(h.CacheControl), aws.ToString(h.ContentDisposition))
	}
	for k, v := range set.Metadata {
		if h.Metadata[k] != v {
			t.Errorf("metadata %s = %q, want %q (all: %v)", k, h.Metadata[k], v, h.Metadata)
		}
	}
	tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tg := range tags.TagSet {
		got[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if fmt.Sprint(got) != fmt.Sprint(set.Tags) {
		t.Errorf("tags %v, want %v", got, set.Tags)
	}
}
