package s3fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ApplyLate sends every request held by a Late fault to the server now, in the
// order they were made, and forgets them. It returns the server's errors,
// joined; a request the server refuses is still forgotten.
func (c *Client) ApplyLate(ctx context.Context) error {
	c.mu.Lock()
	held := c.late
	c.late = nil
	c.mu.Unlock()
	var errs []error
	for _, send := range held {
		if err := send(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Held returns how many requests wait for ApplyLate.
func (c *Client) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.late)
}

// freeze copies a request so that it can be sent later: the caller may reuse
// its input and the buffer behind its body as soon as the call returns.
func freeze[I any](in I) (I, error) {
	var out any
	switch v := any(in).(type) {
	case *s3.UploadPartInput:
		cp := *v
		body, err := copyBody(v.Body)
		if err != nil {
			return in, err
		}
		cp.Body = body
		out = &cp
	case *s3.PutObjectInput:
		cp := *v
		body, err := copyBody(v.Body)
		if err != nil {
			return in, err
		}
		cp.Body = body
		out = &cp
	default:
		// Inputs without a body hold nothing the caller changes afterwards.
		return in, nil
	}
	return out.(I), nil
}

func copyBody(r io.Reader) (io.ReadSeeker, error) {
	if r == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("s3fault: read the body of a late request: %w", err)
	}
	return bytes.NewReader(b), nil
}
