package sink

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// maxSubBatches is the number of spill buckets, and so the most sub-batches a
// shard is split into.
const maxSubBatches = 64

// spillBufferSize is the write buffer of each spill bucket, and the read
// buffer; a spill made when memory is short has buffers as small as
// minSpillBuffer.
const (
	spillBufferSize = 16 << 10
	minSpillBuffer  = 4 << 10
)

// Spill directories are named spillPrefix + a random suffix, in os.TempDir.
// Each holds a lock file that its worker keeps locked (flock) for the
// spill's whole life; the kernel drops the lock when the worker dies, however
// it dies.
const (
	spillPrefix   = "s3once-batch-"
	spillLockName = "lock"
)

// staleSpillAge is the age floor: a spill directory whose lock is free is
// removed only once its modification time is at least this old. It covers
// the instant between creating a directory and locking it, and clock steps.
const staleSpillAge = 10 * time.Minute

// unlockedSpillAge applies where the lock tells nothing: a directory with no
// lock file (made by a release before the lock, or by a worker killed between
// creating the directory and its lock file), and every directory on systems
// without flock. A live worker's spill is that old only if one shard takes a
// day to gather and write.
const unlockedSpillAge = 24 * time.Hour

// spill is a group's records on local disk: maxSubBatches bucket files of
// length-prefixed (uvarint) records, in a directory of its own that the spill
// keeps locked until it is removed.
type spill struct {
	dir    string
	lock   *os.File
	files  [maxSubBatches]*os.File
	bufs   [maxSubBatches]*bufio.Writer
	sizes  [maxSubBatches]int64 // record bytes, prefixes left out
	counts [maxSubBatches]int64 // records
	tmp    [binary.MaxVarintLen64]byte
}

// newSpill makes a spill whose buckets have write buffers of bufSize bytes.
func newSpill(bufSize int) (*spill, error) {
	dir, err := os.MkdirTemp("", spillPrefix+"*")
	if err != nil {
		return nil, err
	}
	sp := &spill{dir: dir}
	lock, err := os.OpenFile(filepath.Join(dir, spillLockName), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		_ = sp.remove()
		return nil, err
	}
	sp.lock = lock
	if err := lockFile(lock); err != nil && !errors.Is(err, errNoFileLocks) {
		_ = sp.remove()
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	for i := range sp.files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("bucket-%02d", i)))
		if err != nil {
			_ = sp.remove()
			return nil, err
		}
		sp.files[i] = f
		sp.bufs[i] = bufio.NewWriterSize(f, bufSize)
	}
	return sp, nil
}

func (sp *spill) add(rec []byte) error {
	i := subBatchHash(rec)
	w := sp.bufs[i]
	n := binary.PutUvarint(sp.tmp[:], uint64(len(rec)))
	if _, err := w.Write(sp.tmp[:n]); err != nil {
		return err
	}
	if _, err := w.Write(rec); err != nil {
		return err
	}
	sp.sizes[i] += int64(len(rec))
	sp.counts[i]++
	return nil
}

// finish flushes and closes the bucket files.
func (sp *spill) finish() error {
	for i, f := range sp.files {
		if err := sp.bufs[i].Flush(); err != nil {
			return err
		}
		sp.files[i] = nil
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// size is the record bytes of buckets [from, to), count their records.
func (sp *spill) size(from, to int) int64 { return sum(sp.sizes[from:to]) }

func (sp *spill) count(from, to int) int64 { return sum(sp.counts[from:to]) }

func sum(v []int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}

// read returns the records of buckets [from, to), copied into one block.
func (sp *spill) read(from, to int) ([][]byte, error) {
	arena := make([]byte, 0, sp.size(from, to))
	var lines [][]byte
	for i := from; i < to; i++ {
		f, err := os.Open(filepath.Join(sp.dir, fmt.Sprintf("bucket-%02d", i)))
		if err != nil {
			return nil, err
		}
		r := bufio.NewReaderSize(f, spillBufferSize)
		var got int64
		for {
			n, err := binary.ReadUvarint(r)
			if err == io.EOF {
				break
			}
			if err != nil || int64(n) > sp.sizes[i]-got {
				f.Close()
				return nil, fmt.Errorf("bucket %d is corrupt (%v)", i, err)
			}
			start := len(arena)
			arena = arena[:start+int(n)]
			if _, err := io.ReadFull(r, arena[start:]); err != nil {
				f.Close()
				return nil, fmt.Errorf("bucket %d: %w", i, err)
			}
			lines = append(lines, arena[start:len(arena):len(arena)])
			got += int64(n)
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if got != sp.sizes[i] {
			return nil, fmt.Errorf("bucket %d holds %d bytes of records, %d were written", i, got, sp.sizes[i])
		}
	}
	return lines, nil
}

// remove closes whatever is still open and deletes the directory. The lock
// is let go last, once the directory is gone.
func (sp *spill) remove() error {
	for i, f := range sp.files {
		if f != nil {
			_ = f.Close()
			sp.files[i] = nil
		}
	}
	err := os.RemoveAll(sp.dir)
	if sp.lock != nil {
		_ = sp.lock.Close()
		sp.lock = nil
	}
	return err
}

// removeStaleSpills removes the spill directories in dir left by workers
// that died without removing them, and returns the ones it removed. A
// directory goes only if its lock can be taken (no live worker holds it) and
// it is older than staleSpillAge, or, where no lock tells, older than
// unlockedSpillAge. Entries it cannot judge or remove are skipped, and
// reported in the error; they are never a reason to remove anything else.
func removeStaleSpills(dir string, now time.Time) (removed []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		// A symbolic link or a file under the name is not a spill.
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spillPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		gone, err := removeIfStale(path, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
		if gone {
			removed = append(removed, path)
		}
	}
	return removed, errors.Join(errs...)
}

// removeIfStale removes one spill directory if no live worker holds it and
// it is old enough.
func removeIfStale(path string, now time.Time) (bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // another worker's Setup was quicker
	}
	if err != nil {
		return false, err
	}
	if !st.IsDir() {
		return false, nil
	}
	age := now.Sub(st.ModTime())
	if age < staleSpillAge {
		return false, nil
	}
	lock, err := os.OpenFile(filepath.Join(path, spillLockName), os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return false, nil // another user's; not ours to judge
	case errors.Is(err, fs.ErrNotExist):
		if age < unlockedSpillAge {
			return false, nil
		}
		return true, os.RemoveAll(path)
	case err != nil:
		return false, err
	}
	defer lock.Close()
	switch err := lockFile(lock); {
	case errors.Is(err, errLocked):
		return false, nil // a live worker's
	case errors.Is(err, errNoFileLocks):
		if age < unlockedSpillAge {
			return false, nil
		}
	case err != nil:
		return false, err
	}
	// Held by us now: no worker can be using it. Remove it before letting go.
	if err := os.RemoveAll(path); err != nil {
		return false, err
	}
	return true, nil
}

// errLocked: another open file (of this process or another) holds the lock.
var errLocked = errors.New("locked by a live worker")

// errNoFileLocks: this system has no advisory file locks here.
var errNoFileLocks = errors.New("no advisory file locks on this system")
