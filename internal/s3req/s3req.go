package s3req

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
)

// ErrInvalid is wrapped by every error Validate and LoadCustomerKey return.
var ErrInvalid = errors.New("s3once: invalid request settings")

// Server-side encryption modes of Settings.Encryption.
const (
	// SSES3 is S3-managed keys (x-amz-server-side-encryption: AES256).
	SSES3 = string(types.ServerSideEncryptionAes256)
	// SSEKMS is AWS KMS keys (aws:kms), with Settings.KMSKeyID or the
	// account's default key.
	SSEKMS = string(types.ServerSideEncryptionAwsKms)
	// SSEKMSDSSE is dual-layer KMS encryption (aws:kms:dsse).
	SSEKMSDSSE = string(types.ServerSideEncryptionAwsKmsDsse)
)

// Limits S3 puts on object settings, checked by Validate.
const (
	MaxTags          = 10
	MaxTagKeyLen     = 128
	MaxTagValueLen   = 256
	MaxMetadataBytes = 2 << 10
	// CustomerKeyLen is the length of an SSE-C key: AES-256.
	CustomerKeyLen = 32
)

// Settings are the request settings of one bucket. The zero value adds
// nothing to any request.
type Settings struct {
	// ExpectedBucketOwner is the account ID that must own the bucket (on
	// AWS, 12 digits); S3 refuses (403) every call to a bucket another
	// account owns.
	ExpectedBucketOwner string
	// Encryption is "", SSES3, SSEKMS or SSEKMSDSSE: the encryption asked
	// for on every object s3once creates. Empty leaves it to the bucket's
	// default encryption.
	Encryption string
	// KMSKeyID is the KMS key (ID, ARN or alias) for SSEKMS and
	// SSEKMSDSSE; empty means the account's AWS-managed key.
	KMSKeyID string
	// BucketKey asks for an S3 Bucket Key with SSEKMS (fewer KMS calls).
	BucketKey bool
	// CustomerKey is the SSE-C key, sent on every request that writes or
	// reads data. Build it with LoadCustomerKey or NewCustomerKey; it never
	// prints.
	CustomerKey CustomerKey

	// Object settings of the output files, applied to every
	// CreateMultipartUpload.
	StorageClass       string
	Tags               map[string]string
	CacheControl       string
	ContentDisposition string
	Metadata           map[string]string
	// ObjectsOnPut applies the object settings to every PutObject too: for
	// a client whose whole objects are output (an Iceberg table's
	// metadata), not the sink's, whose PutObjects are its own small
	// objects (markers, manifests, side objects, probes).
	ObjectsOnPut bool
}

// CustomerKey is an SSE-C key in the form S3 takes it (base64 of the key and
// of its MD5). Its zero value means no SSE-C. It prints as "[redacted]".
type CustomerKey struct {
	b64, md5 string
}

// NewCustomerKey checks and wraps a raw 32-byte key.
func NewCustomerKey(raw []byte) (CustomerKey, error) {
	if len(raw) != CustomerKeyLen {
		return CustomerKey{}, fmt.Errorf("%w: an SSE-C key is %d bytes, not %d", ErrInvalid, CustomerKeyLen, len(raw))
	}
	sum := md5.Sum(raw)
	return CustomerKey{b64: base64.StdEncoding.EncodeToString(raw), md5: base64.StdEncoding.EncodeToString(sum[:])}, nil
}

// IsSet reports whether k holds a key.
func (k CustomerKey) IsSet() bool { return k.b64 != "" }

// MD5 is the base64 MD5 of the key, which S3 echoes back; it does not
// reveal the key.
func (k CustomerKey) MD5() string { return k.md5 }

// String never shows the key.
func (k CustomerKey) String() string {
	if !k.IsSet() {
		return "none"
	}
	return "[redacted]"
}

// GoString never shows the key either (%#v).
func (k CustomerKey) GoString() string { return k.String() }

// Format never shows the key, whatever the verb (%x, %d, %+v).
func (k CustomerKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue never shows the key in a structured log line.
func (k CustomerKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalJSON never shows the key.
func (k CustomerKey) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }

// LoadCustomerKey reads an SSE-C key on the machine that runs the code,
// never from the pipeline graph: from the environment variable named env
// (the key in base64), or from the file at path (32 raw bytes, or their
// base64 with optional surrounding white space). Both empty means no key.
func LoadCustomerKey(env, path string) (CustomerKey, error) {
	switch {
	case env != "" && path != "":
		return CustomerKey{}, fmt.Errorf("%w: SSE-C key from both an environment variable (%s) and a file (%s): pick one", ErrInvalid, env, path)
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || strings.TrimSpace(v) == "" {
			return CustomerKey{}, fmt.Errorf("%w: the SSE-C key's environment variable %s is not set on this machine", ErrInvalid, env)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			return CustomerKey{}, fmt.Errorf("%w: the SSE-C key in %s is not base64: %w", ErrInvalid, env, err)
		}
		k, err := NewCustomerKey(raw)
		if err != nil {
			return CustomerKey{}, fmt.Errorf("SSE-C key in %s: %w", env, err)
		}
		return k, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return CustomerKey{}, fmt.Errorf("%w: read the SSE-C key file: %w", ErrInvalid, err)
		}
		raw := b
		if len(b) != CustomerKeyLen {
			d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
			if err != nil {
				return CustomerKey{}, fmt.Errorf("%w: the SSE-C key file %s holds neither %d raw bytes nor their base64", ErrInvalid, path, CustomerKeyLen)
			}
			raw = d
		}
		k, err := NewCustomerKey(raw)
		if err != nil {
			return CustomerKey{}, fmt.Errorf("SSE-C key file %s: %w", path, err)
		}
		return k, nil
	}
	return CustomerKey{}, nil
}

var (
	// AWS takes a 12-digit account ID; S3-compatible servers have their
	// own forms (versitygw: the owner's access key ID).
	ownerID = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,128}$`)
	// An HTTP header token, as S3 takes user metadata names.
	metaName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate reports every problem of s in one error wrapping ErrInvalid.
func (s Settings) Validate() error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if s.ExpectedBucketOwner != "" && !ownerID.MatchString(s.ExpectedBucketOwner) {
		bad("ExpectedBucketOwner %q must be an account ID (on AWS, 12 digits)", s.ExpectedBucketOwner)
	}
	switch s.Encryption {
	case "", SSES3, SSEKMS, SSEKMSDSSE:
	default:
		bad("Encryption %q must be %q (SSE-S3), %q or %q (SSE-KMS), or empty for the bucket's default", s.Encryption, SSES3, SSEKMS, SSEKMSDSSE)
	}
	kms := s.Encryption == SSEKMS || s.Encryption == SSEKMSDSSE
	if s.KMSKeyID != "" && !kms {
		bad("KMSKeyID needs Encryption %q or %q", SSEKMS, SSEKMSDSSE)
	}
	if s.BucketKey && s.Encryption != SSEKMS {
		bad("BucketKey needs Encryption %q", SSEKMS)
	}
	if s.CustomerKey.IsSet() && s.Encryption != "" {
		bad("an SSE-C key and Encryption %q exclude each other: S3 takes one kind of server-side encryption per object", s.Encryption)
	}
	if s.StorageClass != "" && !slices.Contains(types.StorageClass("").Values(), types.StorageClass(s.StorageClass)) {
		bad("StorageClass %q is not one S3 knows (STANDARD, STANDARD_IA, INTELLIGENT_TIERING, GLACIER_IR, ...)", s.StorageClass)
	}
	if len(s.Tags) > MaxTags {
		bad("%d Tags: S3 allows at most %d per object", len(s.Tags), MaxTags)
	}
	for k, v := range s.Tags {
		if k == "" || len(k) > MaxTagKeyLen || strings.HasPrefix(strings.ToLower(k), "aws:") {
			bad("tag key %q must have 1 to %d characters and not start with \"aws:\"", k, MaxTagKeyLen)
		}
		if len(v) > MaxTagValueLen {
			bad("tag %q's value has %d characters, at most %d allowed", k, len(v), MaxTagValueLen)
		}
		if !tagText(k) || !tagText(v) {
			bad("tag %q=%q holds a character S3 refuses in tags (allowed: letters, digits, spaces and _ . : / = + - @)", k, v)
		}
	}
	size := 0
	for k, v := range s.Metadata {
		size += len(k) + len(v)
		if !metaName.MatchString(k) {
			bad("Metadata name %q must be an HTTP header token (letters, digits, '-', ...)", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			bad("Metadata %q's value holds a line break", k)
		}
	}
	if size > MaxMetadataBytes {
		bad("Metadata is %d bytes, S3 allows %d", size, MaxMetadataBytes)
	}
	for what, v := range map[string]string{"CacheControl": s.CacheControl, "ContentDisposition": s.ContentDisposition} {
		if strings.ContainsAny(v, "\r\n") {
			bad("%s holds a line break", what)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
}

// tagText reports whether s holds only characters S3 takes in tag keys and
// values.
func tagText(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsSpace(r) && !strings.ContainsRune("_.:/=+-@", r) {
			return false
		}
	}
	return true
}

// IsZero reports whether s adds nothing to any request.
func (s Settings) IsZero() bool {
	return s.ExpectedBucketOwner == "" && s.Encryption == "" && s.KMSKeyID == "" && !s.BucketKey &&
		!s.CustomerKey.IsSet() && s.StorageClass == "" && len(s.Tags) == 0 && s.CacheControl == "" &&
		s.ContentDisposition == "" && len(s.Metadata) == 0
}

// Apply adds s to a client's options: every call the client makes then
// carries them. Use it in s3.NewFromConfig's or s3.New's option functions.
func (s Settings) Apply(o *s3.Options) {
	if s.IsZero() {
		return
	}
	o.APIOptions = append(o.APIOptions, s.addTo)
}

// MiddlewareID names the middleware in a client's stack.
const MiddlewareID = "s3once.RequestSettings"

func (s Settings) addTo(stack *middleware.Stack) error {
	tagging := s.tagging()
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(MiddlewareID,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			in.Parameters = s.applyTo(in.Parameters, tagging)
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// tagging encodes Tags as the Tagging header wants them: a URL query, in a
// fixed order.
func (s Settings) tagging() string {
	if len(s.Tags) == 0 {
		return ""
	}
	q := url.Values{}
	for k, v := range s.Tags {
		q.Set(k, v)
	}
	return q.Encode() // sorted by key
}

// applyTo returns a copy of an operation's input with the settings filled
// in where the caller left them unset; the caller's input is not changed.
func (s Settings) applyTo(params any, tagging string) any {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return params
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	// Every S3 operation that names a bucket takes ExpectedBucketOwner.
	if s.ExpectedBucketOwner != "" {
		if f := cp.Elem().FieldByName("ExpectedBucketOwner"); f.IsValid() && f.Type() == reflect.TypeFor[*string]() && f.IsNil() {
			f.Set(reflect.ValueOf(aws.String(s.ExpectedBucketOwner)))
		}
	}
	out := cp.Interface()
	switch in := out.(type) {
	case *s3.CreateMultipartUploadInput:
		s.encrypt(&in.ServerSideEncryption, &in.SSEKMSKeyId, &in.BucketKeyEnabled)
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
		s.objects(&in.StorageClass, &in.Tagging, &in.CacheControl, &in.ContentDisposition, &in.Metadata, tagging)
	case *s3.PutObjectInput:
		s.encrypt(&in.ServerSideEncryption, &in.SSEKMSKeyId, &in.BucketKeyEnabled)
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
		if s.ObjectsOnPut {
			s.objects(&in.StorageClass, &in.Tagging, &in.CacheControl, &in.ContentDisposition, &in.Metadata, tagging)
		}
	case *s3.UploadPartInput:
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
	case *s3.CompleteMultipartUploadInput:
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
	case *s3.ListPartsInput:
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
	case *s3.GetObjectInput:
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
	case *s3.HeadObjectInput:
		s.customer(&in.SSECustomerAlgorithm, &in.SSECustomerKey, &in.SSECustomerKeyMD5)
	}
	return out
}

// objects fills in the object settings where the caller left them unset.
func (s Settings) objects(class *types.StorageClass, tags, cache, disposition **string, meta *map[string]string, tagging string) {
	if *class == "" && s.StorageClass != "" {
		*class = types.StorageClass(s.StorageClass)
	}
	setString(tags, tagging)
	setString(cache, s.CacheControl)
	setString(disposition, s.ContentDisposition)
	if len(*meta) == 0 && len(s.Metadata) > 0 {
		*meta = maps.Clone(s.Metadata)
	}
}

func (s Settings) encrypt(sse *types.ServerSideEncryption, keyID **string, bucketKey **bool) {
	if s.Encryption == "" || *sse != "" {
		return
	}
	*sse = types.ServerSideEncryption(s.Encryption)
	setString(keyID, s.KMSKeyID)
	if s.BucketKey && *bucketKey == nil {
		*bucketKey = aws.Bool(true)
	}
}

func (s Settings) customer(alg, key, sum **string) {
	if !s.CustomerKey.IsSet() || *key != nil {
		return
	}
	*alg = aws.String("AES256")
	*key = aws.String(s.CustomerKey.b64)
	*sum = aws.String(s.CustomerKey.md5)
}

func setString(p **string, v string) {
	if v != "" && *p == nil {
		*p = aws.String(v)
	}
}
