package s3call

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestApplyConfigBoundsAttempts: a client built by another library from a
// configuration ApplyConfig readied (as iceberg-go builds its own) ends an
// attempt that the server never answers at the attempt bound, and retries
// it within the configuration's attempts; without the bound the call would
// hang for as long as its context lets it.
func TestApplyConfigBoundsAttempts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	cfg := aws.Config{Region: "us-east-1", RetryMaxAttempts: 2,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	const bound = 300 * time.Millisecond
	NewThrottle(0).ApplyConfig(&cfg, bound)
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String("http://" + ln.Addr().String())
		o.UsePathStyle = true
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a call to a server that never answers succeeded")
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("the call ran until its context ended (%v): no attempt bound: %v", took, err)
	}
	mu.Lock()
	attempts := len(conns)
	mu.Unlock()
	if attempts != 2 {
		t.Errorf("the server saw %d connections; want one per attempt, 2", attempts)
	}
	if took < 2*bound {
		t.Errorf("the call failed after %v, before two attempts of %v each", took, bound)
	}
	t.Logf("failed after %v and %d attempts: %v", took, attempts, err)
}
