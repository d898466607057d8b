package committer_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3once/s3once/committer"
)

// inFlight is a client through which a committer meets another completion of
// the same token in flight, as when the bundle-finalization callback and the
// commit stage complete one file at once. Its first ListParts answers with
// the part list as a server shows it in the middle of that completion (the
// parts already moved away: an empty list), and the other completion ends
// either during that ListParts (the object shows at the committer's next
// look) or just after the committer's first look at the key (the object
// shows only at the look after its second listing).
type inFlight struct {
	committer.S3
	other     func() // completes the upload through another committer
	afterLook bool   // the other completion ends after the first look, not during the listing

	mu           sync.Mutex
	lists, looks int
}

func (f *inFlight) ListParts(ctx context.Context, in *s3.ListPartsInput, opts ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	f.mu.Lock()
	f.lists++
	first := f.lists == 1
	f.mu.Unlock()
	out, err := f.S3.ListParts(ctx, in, opts...)
	if !first || err != nil {
		return out, err
	}
	out.Parts = nil // mid-completion: the parts have moved away
	if !f.afterLook {
		f.other()
	}
	return out, nil
}

// look counts a look at the key after the first listing, and ends the other
// completion after the first one when afterLook.
func (f *inFlight) look() {
	f.mu.Lock()
	f.looks++
	end := f.afterLook && f.lists == 1 && f.looks == 1
	f.mu.Unlock()
	if end {
		f.other()
	}
}

func (f *inFlight) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	defer f.look()
	return f.S3.HeadObject(ctx, in, opts...)
}

func (f *inFlight) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	defer f.look()
	return f.S3.GetObject(ctx, in, opts...)
}

// TestCommitMeetsCompletionInFlight: a part list emptied by another
// completion of the same token is not ErrPartsChanged. Whether the object
// shows at the committer's look right after the listing, or only once it
// lists again, the commit succeeds without creating the object, and the
// object holds the token's bytes.
func TestCommitMeetsCompletionInFlight(t *testing.T) {
	e := newEnv(t)
	for i, afterLook := range []bool{false, true} {
		data := payload(uint64(40+i), 3000)
		cr := e.write(key("in-flight", i), data, 1)
		other := newCommitter(t, e.client, committer.Options{SkipPreflight: true})
		f := &inFlight{S3: e.client, afterLook: afterLook}
		f.other = func() {
			if res, err := other.Commit(context.Background(), cr); err != nil || !res.Created {
				t.Errorf("the other completion: %+v, %v", res, err)
			}
		}
		c := newCommitter(t, f, committer.Options{SkipPreflight: true})
		res, err := c.Commit(context.Background(), cr)
		if err != nil {
			t.Fatalf("object shows after the look %v: commit beside a completion in flight: %v", afterLook, err)
		}
		if res.Created || !res.AlreadyCommitted {
			t.Errorf("object shows after the look %v: %+v, want AlreadyCommitted (the other completion made it)", afterLook, res)
		}
		if f.lists < 1 || (afterLook && f.lists < 2) {
			t.Errorf("object shows after the look %v: %d listings", afterLook, f.lists)
		}
		if got := e.get(cr.Key); !bytes.Equal(got, data) {
			t.Errorf("object shows after the look %v: the object holds %d bytes, not the token's %d", afterLook, len(got), len(data))
		}
	}
}
