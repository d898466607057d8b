package recoverable

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// partPool keeps the part buffers that finished streams gave back, so that the
// next stream of the same Writer reuses them instead of allocating (and
// faulting in) PartSize x (Concurrency+1) bytes of fresh memory per file. It
// holds only buffers of the writer's own part size (a stream recovered from a
// token with another part size allocates its own, which the collector frees),
// and at most max of them: the idle memory of a Writer is bounded by
// PartSize x (Concurrency+1), whatever number of streams came and went.
//
// A buffer enters the pool only once nothing can read it any more: every
// request body over it has been retired (see partBody).
type partPool struct {
	size int64
	max  int

	mu   sync.Mutex
	free [][]byte
}

func newPartPool(size int64, max int) *partPool {
	return &partPool{size: size, max: max}
}

// get returns an empty buffer of capacity p.size, from the pool when one is
// idle, or nil when the pool is empty.
func (p *partPool) get() []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return nil
	}
	b := p.free[n-1]
	p.free[n-1] = nil
	p.free = p.free[:n-1]
	return b[:0]
}

// put gives b back. A buffer of another capacity, or one beyond the bound, is
// left to the collector.
func (p *partPool) put(b []byte) {
	if p == nil || b == nil || int64(cap(b)) != p.size {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < p.max {
		p.free = append(p.free, b[:0])
	}
}

// idle is the number of buffers in the pool.
func (p *partPool) idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// errBodyRetired is what a request body returns when read after its request
// finished for good (a transport still writing an abandoned request).
var errBodyRetired = errors.New("request body read after its request finished")

// partBody is the request body of one attempt to send a buffer: a seekable
// reader over it that can be retired. The HTTP transport may go on reading a
// request's body after the call returned (an early reply, an abandoned
// attempt), and the SDK rewinds and resends a body when it retries; a buffer
// that is reused while such a read runs would send another part's bytes. So
// every read holds the body's lock, and retire, which the stream calls once the
// call has returned for good, takes the lock and makes every later read fail.
// Once retire reports true, nothing reads the buffer through this body any
// more. Retire never waits: a read in progress (a transport blocked writing to
// a stalled connection) makes it report false, and the buffer is then left to
// the collector instead of being reused.
type partBody struct {
	mu      sync.Mutex // held by every read
	buf     []byte
	off     int64
	retired atomic.Bool
}

func newPartBody(buf []byte) *partBody { return &partBody{buf: buf} }

func (b *partBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.retired.Load() {
		return 0, errBodyRetired
	}
	if b.off >= int64(len(b.buf)) {
		return 0, io.EOF
	}
	n := copy(p, b.buf[b.off:])
	b.off += int64(n)
	return n, nil
}

func (b *partBody) Seek(offset int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = b.off + offset
	case io.SeekEnd:
		abs = int64(len(b.buf)) + offset
	default:
		return 0, errors.New("partBody.Seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("partBody.Seek: negative position")
	}
	b.off = abs
	return abs, nil
}

// Len is the number of unread bytes, as bytes.Reader reports it (the SDK asks
// for it to learn a body's length).
func (b *partBody) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.off >= int64(len(b.buf)) {
		return 0
	}
	return int(int64(len(b.buf)) - b.off)
}

// retire ends the body: reads from now on fail. It reports whether no read was
// in progress, that is whether the buffer is free of this body.
func (b *partBody) retire() bool {
	// The flag goes first: a read that takes the lock after the TryLock below
	// sees it. A read holding the lock now makes TryLock fail; it ends on its
	// own and every later one sees the flag.
	b.retired.Store(true)
	if !b.mu.TryLock() {
		return false
	}
	b.mu.Unlock()
	return true
}

// bodies are the request bodies made over one buffer for the attempts of one
// call.
type bodies struct {
	list []*partBody
}

// over returns a fresh body over buf for the next attempt.
func (bs *bodies) over(buf []byte) io.ReadSeeker {
	b := newPartBody(buf)
	bs.list = append(bs.list, b)
	return b
}

// retire retires every body and reports whether the buffer is free of all of
// them.
func (bs *bodies) retire() bool {
	free := true
	for _, b := range bs.list {
		if !b.retire() {
			free = false
		}
	}
	return free
}
