package committer_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/s3once/s3once/committer"
	"github.com/s3once/s3once/internal/testkit/s3fault"
	"github.com/s3once/s3once/internal/testkit/s3mem"
	"github.com/s3once/s3once/recoverable"
)

// lateObject hides the object at the key until a moment of the (fake)
// clock, as a server does while another committer's completion of the same
// upload is still landing: the upload is already gone, the object not there
// yet.
type lateObject struct {
	committer.S3
	until time.Time
}

func (l lateObject) hidden() bool { return time.Now().Before(l.until) }

func (l lateObject) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if l.hidden() {
		return nil, s3fault.APIError(s3fault.HeadObject, http.StatusNotFound, "NotFound", "Not Found")
	}
	return l.S3.HeadObject(ctx, in, opts...)
}

func (l lateObject) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if l.hidden() {
		return nil, s3fault.APIError(s3fault.GetObject, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	}
	return l.S3.GetObject(ctx, in, opts...)
}

// memFile writes a two-part file to a new in-memory server and returns the
// client, the token and the bytes.
func memFile(t *testing.T, fake *s3mem.Fake, key string) (*s3.Client, recoverable.CommitToken, []byte) {
	t.Helper()
	client := fake.NewClient(s3mem.ClientOptions{})
	data := payload(900, 6<<20)
	cr := writeWith(t, client, fake.Bucket(), key, data, 1, recoverable.Options{})
	return client, cr, data
}

// completeBehindTheBack completes the token's upload as another committer
// would (the committer under test then finds it gone).
func completeBehindTheBack(t *testing.T, client *s3.Client, cr recoverable.CommitToken) {
	t.Helper()
	other, err := committer.New(client, committer.Options{SkipPreflight: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := other.Commit(context.Background(), cr); err != nil || !res.Created {
		t.Fatalf("the other committer: %+v %v", res, err)
	}
}

// An upload completed elsewhere whose object shows only minutes later is a
// success, however long the completion takes within the settle window.
func TestSettleWaitsForACompletionInFlight(t *testing.T) {
	for _, late := range []time.Duration{90 * time.Second, 7 * time.Minute, committer.DefaultCompleteTimeout - time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := s3mem.New(s3mem.Options{})
				client, cr, data := memFile(t, fake, "out/late")
				completeBehindTheBack(t, client, cr)
				start := time.Now()
				c, err := committer.New(lateObject{client, start.Add(late)}, committer.Options{Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				res, err := c.Commit(context.Background(), cr)
				if err != nil {
					t.Fatalf("after %v of fake time: %v", time.Since(start), err)
				}
				checkResult(t, res, cr)
				if !res.AlreadyCommitted {
					t.Fatalf("result %+v: the object was made by the other committer", res)
				}
				if waited := time.Since(start); waited < late || waited > late+committer.DefaultMaxBackoff {
					t.Fatalf("settled after %v; the object showed after %v", waited, late)
				}
				got, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key)})
				if err != nil {
					t.Fatal(err)
				}
				defer got.Body.Close()
				if aws.ToInt64(got.ContentLength) != int64(len(data)) {
					t.Fatalf("object of %d bytes, want %d", aws.ToInt64(got.ContentLength), len(data))
				}
			})
		})
	}
}

// An upload gone with nothing ever at the key is ErrDataLost, exactly when
// the settle window ends: CompleteTimeout by default, SettleTimeout when
// set. The error says how long it waited and why.
func TestSettleGivesUpExactlyAtTheBound(t *testing.T) {
	cases := []struct {
		name string
		opts committer.Options
		want time.Duration
	}{
		{"default", committer.Options{}, committer.DefaultCompleteTimeout},
		{"CompleteTimeout", committer.Options{CompleteTimeout: 4 * time.Minute}, 4 * time.Minute},
		{"SettleTimeout", committer.Options{CompleteTimeout: 4 * time.Minute, SettleTimeout: 25 * time.Minute}, 25 * time.Minute},
		{"unbounded completion", committer.Options{CompleteTimeout: -1}, committer.DefaultCompleteTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := s3mem.New(s3mem.Options{})
				client, cr, _ := memFile(t, fake, "out/lost")
				if _, err := client.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{
					Bucket: aws.String(cr.Bucket), Key: aws.String(cr.Key), UploadId: aws.String(cr.UploadID),
				}); err != nil {
					t.Fatal(err)
				}
				var logs strings.Builder
				o := tc.opts
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				c, err := committer.New(client, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, commit := range []func(context.Context, recoverable.CommitToken) (committer.Result, error){c.Commit, c.CommitAfterRecovery} {
					start := time.Now()
					_, err := commit(context.Background(), cr)
					if !errors.Is(err, committer.ErrDataLost) {
						t.Fatalf("want ErrDataLost, got %v", err)
					}
					if waited := time.Since(start); waited != tc.want {
						t.Fatalf("gave up after %v of fake time, want exactly %v", waited, tc.want)
					}
					if re := mustBeTyped(t, err, cr); re.Hint == "" || !strings.Contains(err.Error(), tc.want.String()) || !strings.Contains(err.Error(), "settle window") {
						t.Fatalf("the error does not say how long it waited and why: %v", err)
					}
				}
				// A wait that long is not silent while it lasts either.
				if n := strings.Count(logs.String(), "level=WARN"); n != 2 || !strings.Contains(logs.String(), "waiting for a completion in flight") {
					t.Fatalf("want one warning per commit, got:\n%s", logs.String())
				}
			})
		})
	}
}

// A settle window shorter than a completion may take is refused.
func TestSettleTimeoutOptions(t *testing.T) {
	client := s3mem.New(s3mem.Options{}).NewClient(s3mem.ClientOptions{})
	for _, o := range []committer.Options{
		{SettleTimeout: -time.Second},
		{SettleTimeout: time.Minute}, // below the default CompleteTimeout
		{CompleteTimeout: time.Hour, SettleTimeout: 59 * time.Minute},
	} {
		if _, err := committer.New(client, o); !errors.Is(err, recoverable.ErrInvalidOptions) {
			t.Errorf("%+v: want ErrInvalidOptions, got %v", o, err)
		}
	}
	c, err := committer.New(client, committer.Options{CompleteTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Options().SettleTimeout; got != time.Minute {
		t.Fatalf("SettleTimeout defaults to %v, want CompleteTimeout (1m)", got)
	}
}
