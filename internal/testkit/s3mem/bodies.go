package s3mem

import (
	"fmt"
	"io"
	"sync"
)

// Request bodies of 64 KiB and more (parts, tails) are read into buffers
// that a Fake gives back when its user is done with it (Release), for the
// next Fake of the process to take. A test that runs thousands of short
// schedules, each with a Fake of its own, then reuses the same few hundred
// MiB instead of allocating tens of MiB per schedule: under the race
// detector, memory that is freshly allocated and freed again costs some ten
// times the copy into it (its shadow memory is mapped and cleared each
// time). Without Release nothing is reused, and a Fake behaves as before.

const (
	// pooledMin is the smallest body read into a pooled buffer.
	pooledMin = 64 << 10
	// pooledMax caps the bytes the pool keeps; what Release gives beyond it
	// is left to the garbage collector.
	pooledMax = 512 << 20
)

var bodies struct {
	mu    sync.Mutex
	free  map[int][][]byte // by capacity
	bytes int
}

// takeBody returns a buffer of length n, from the pool if it holds one of
// capacity n.
func takeBody(n int) []byte {
	if n >= pooledMin {
		bodies.mu.Lock()
		if l := bodies.free[n]; len(l) > 0 {
			b := l[len(l)-1]
			bodies.free[n] = l[:len(l)-1]
			bodies.bytes -= cap(b)
			bodies.mu.Unlock()
			return b[:n]
		}
		bodies.mu.Unlock()
	}
	return make([]byte, n)
}

// giveBodies puts buffers back in the pool, each once, up to pooledMax.
func giveBodies(bufs [][]byte) {
	bodies.mu.Lock()
	defer bodies.mu.Unlock()
	if bodies.free == nil {
		bodies.free = map[int][][]byte{}
	}
	seen := map[*byte]bool{}
	for _, b := range bufs {
		if cap(b) < pooledMin || bodies.bytes+cap(b) > pooledMax {
			continue
		}
		b = b[:cap(b)]
		if seen[&b[0]] {
			continue
		}
		seen[&b[0]] = true
		bodies.free[cap(b)] = append(bodies.free[cap(b)], b)
		bodies.bytes += cap(b)
	}
}

// readBody reads a request body in one buffer when its length is known.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return io.ReadAll(r)
	}
	b := takeBody(int(n))
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return nil, fmt.Errorf("body longer than its Content-Length %d", n)
	}
	return b, nil
}

// Release gives the bytes of every body the Fake stored (parts, objects,
// requests that land late) to the next Fakes of the process, and empties
// the Fake. Call it only once nothing reads the Fake any more: no client
// request in flight, no response body or Stored slice still in use. Using
// the Fake after Release is a bug; its buckets are gone.
func (f *Fake) Release() {
	f.mu.Lock()
	var bufs [][]byte
	for _, b := range f.buckets {
		for _, u := range b.uploads {
			for _, p := range u.parts {
				bufs = append(bufs, p.data)
			}
		}
		for _, o := range b.objects {
			bufs = append(bufs, o.chunks...)
		}
		for _, l := range b.lagged {
			bufs = append(bufs, l.o.chunks...)
		}
	}
	for _, ls := range f.late {
		for _, l := range ls {
			bufs = append(bufs, l.r.body)
		}
	}
	f.buckets, f.late = map[string]*bucket{}, map[string][]lateRequest{}
	f.mu.Unlock()
	giveBodies(bufs)
}
