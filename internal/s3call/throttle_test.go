package s3call_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/errcode"
	"github.com/s3once/s3once/internal/s3call"
	"github.com/s3once/s3once/internal/testkit/s3test"
	"github.com/s3once/s3once/internal/testkit/slowdown"
)

// throttled is a client of a real server whose requests pass through a
// SlowDown injector, below the SDK's retryer.
type throttled struct {
	client   *s3.Client
	throttle *s3call.Throttle
	inj      *slowdown.Injector
	bucket   string
	srv      *s3test.Server
}

func newThrottled(t *testing.T, budget time.Duration, o slowdown.Options) throttled {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	inj := slowdown.New(o)
	th := s3call.NewThrottle(budget)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	c, err := s3call.NewClient(context.Background(), s3call.ClientOptions{
		Endpoint: srv.Endpoint(), Region: s3test.Region, PathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s3test.AccessKey, s3test.SecretKey, ""),
		Throttle:    th,
		Options: []func(*s3.Options){func(o *s3.Options) {
			o.HTTPClient = &http.Client{Transport: inj.Transport(nil)}
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return throttled{client: c, throttle: th, inj: inj, bucket: srv.Bucket(t), srv: srv}
}

// streamPolicy is the stream's policy: attempts that time out are made
// again, nothing else.
var streamPolicy = s3call.Policy{CallTimeout: s3call.BaseCallTimeout, Attempts: s3call.TimeoutAttempts, Retry: s3call.RetryTimeouts}

func (tc throttled) put(ctx context.Context, key string, body []byte) error {
	_, err := s3call.Do(ctx, streamPolicy, "put "+key, func(ctx context.Context) (*s3.PutObjectOutput, error) {
		return tc.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	})
	return err
}

// A storm shorter than the budget costs time, never the call: the SDK's
// retryer sees every SlowDown the injector gave (the throttle counts them
// inside the retryer's loop), many more than the SDK's three attempts, and
// the call succeeds with its bytes in place.
func TestThrottleStormWithinBudget(t *testing.T) {
	tc := newThrottled(t, 10*time.Minute, slowdown.Options{})
	ctx := context.Background()
	body := bytes.Repeat([]byte("storm "), 1000)
	tc.inj.Storm(4 * time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = tc.put(ctx, "out/part-"+string(rune('a'+i)), body) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d failed within its budget: %v", i, err)
		}
	}
	st := tc.throttle.Stats()
	answered := tc.inj.SlowDowns()
	t.Logf("injector answered SlowDown %d times; throttle stats %+v", answered, st)
	if answered <= 3 {
		t.Errorf("the injector answered SlowDown only %d times: the storm did not outlast the SDK's attempts", answered)
	}
	if st.Answers != answered {
		t.Errorf("the client met %d throttling answers, the injector gave %d", st.Answers, answered)
	}
	if st.Calls != int64(len(errs)) || st.Exhausted != 0 || st.Waited <= 0 {
		t.Errorf("stats %+v: want %d throttled calls, none exhausted, some waiting", st, len(errs))
	}
	for i := range errs {
		key := "out/part-" + string(rune('a'+i))
		if got := s3test.Object(t, tc.client, tc.bucket, key); !bytes.Equal(got, body) {
			t.Errorf("%s holds %d bytes, want %d", key, len(got), len(body))
		}
	}
}

// A storm longer than the budget fails the call, not before the budget,
// with ErrThrottled naming the bucket, key and upload; nothing is retried
// above it, and the upload stays for a rerun to resume.
func TestThrottleBudgetEnds(t *testing.T) {
	const budget = 3 * time.Second
	tc := newThrottled(t, budget, slowdown.Options{})
	ctx := context.Background()
	key := "out/big"
	up, err := tc.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(tc.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	tc.inj.Storm(time.Hour)
	began := time.Now()
	_, err = s3call.Do(ctx, streamPolicy, "upload part 1", func(ctx context.Context) (*s3.UploadPartOutput, error) {
		return tc.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(tc.bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
	})
	took := time.Since(began)
	tc.inj.Calm()
	if err == nil {
		t.Fatal("a call throttled past its budget succeeded")
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took < budget {
		t.Errorf("the call failed after %v, before its budget of %v", took, budget)
	}
	var te *s3call.ThrottledError
	switch {
	case !errors.Is(err, s3call.ErrThrottled) || !errors.As(err, &te):
		t.Errorf("error does not wrap ErrThrottled: %v", err)
	case te.Bucket != tc.bucket || te.Key != key || te.UploadID != *up.UploadId || te.Op != "UploadPart":
		t.Errorf("typed error names %s s3://%s/%s upload %s", te.Op, te.Bucket, te.Key, te.UploadID)
	case te.Throttled < budget || te.Throttled > took:
		t.Errorf("the error says the call was throttled for %v: want at least its budget of %v and at most the %v it took", te.Throttled, budget, took)
	}
	if !errcode.Has(errors.New(err.Error()), errcode.Throttled) {
		t.Errorf("message lacks %s: %v", errcode.Throttled.Token(), err)
	}
	if c := s3call.CodeOf(err); c != s3call.Throttled || s3call.IsRetryable(err) {
		t.Errorf("CodeOf = %v, retryable %v: want Throttled, terminal", c, s3call.IsRetryable(err))
	}
	for _, want := range []string{tc.bucket, key, *up.UploadId, "ThrottleBudget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q", want)
		}
	}
	if st := tc.throttle.Stats(); st.Exhausted != 1 || st.Calls != 1 {
		t.Errorf("stats %+v: want one throttled call, exhausted", st)
	}
	// The upload is intact: the part goes in once the storm is over.
	if _, err := tc.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(tc.bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("part")}); err != nil {
		t.Errorf("the upload did not survive the storm: %v", err)
	}
}

// A rate limit per prefix: many calls at once to one folder are held to
// its rate, all succeed, and a folder beside it is not slowed by the
// other's answers.
func TestThrottleRateLimitPerPrefix(t *testing.T) {
	tc := newThrottled(t, 10*time.Minute, slowdown.Options{
		Rate: 20, Burst: 2,
		Match: func(r *http.Request) bool {
			_, key := slowdown.Target(r)
			return strings.HasPrefix(key, "busy/")
		},
	})
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	for i := range 40 {
		wg.Go(func() {
			if err := tc.put(ctx, "busy/"+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte("x")); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d calls failed under the rate limit, first: %v", len(failed), failed[0])
	}
	st := tc.throttle.Stats()
	if tc.inj.SlowDowns() == 0 || st.Answers != tc.inj.SlowDowns() {
		t.Errorf("injector gave %d SlowDowns, the client met %d: want some, all met", tc.inj.SlowDowns(), st.Answers)
	}
	if got := len(s3test.Keys(t, tc.client, tc.bucket, "busy/")); got != 40 {
		t.Errorf("%d objects under busy/, want 40", got)
	}
	// The busy folder's lane is backing off now; a call to another folder
	// is not held back by it, nor answered SlowDown.
	before := tc.throttle.Stats()
	if err := tc.put(ctx, "quiet/x", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if after := tc.throttle.Stats(); after.Answers != before.Answers {
		t.Errorf("a call to another folder met %d throttling answers", after.Answers-before.Answers)
	}
	t.Logf("%d SlowDowns; stats %+v", tc.inj.SlowDowns(), st)
}

// A call outside any Policy (the preflight's probes) keeps the SDK's own
// retries of throttling answers, with the lane's backoff before each: the
// lane waits at least 100 ms after the first answer and 200 ms after the
// second, so the third of the SDK's attempts comes after a 300 ms storm.
func TestThrottleOutsidePolicy(t *testing.T) {
	tc := newThrottled(t, 10*time.Minute, slowdown.Options{})
	ctx := context.Background()
	tc.inj.Storm(300 * time.Millisecond)
	_, err := tc.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String("probe"), Body: strings.NewReader("p")})
	if err != nil {
		t.Fatalf("a call outside a Policy failed after %d SlowDowns: %v", tc.inj.SlowDowns(), err)
	}
	if n := tc.inj.SlowDowns(); n == 0 || tc.throttle.Stats().Answers != n {
		t.Errorf("the injector gave %d SlowDowns, the client met %d", n, tc.throttle.Stats().Answers)
	}
	if got := s3test.Object(t, tc.client, tc.bucket, "probe"); string(got) != "p" {
		t.Errorf("probe holds %q", got)
	}
}
