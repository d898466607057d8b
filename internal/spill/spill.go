// Package spill keeps a group's records on local disk while the sink's
// Batch stage gathers a group larger than its memory allows: Buckets
// bucket files under a directory of their own in os.TempDir, each record
// in the bucket its hash (Hash) picks, read back later a run of buckets at
// a time, each run one sub-batch (SubBatches says how many).
//
// A worker killed while it spills cannot remove its directory;
// RemoveStale, which the Batch stage's Setup calls, does, in every worker
// started later on the machine. Each directory holds a lock file that its
// worker keeps flock-ed for the spill's life; the kernel drops that lock
// when the worker dies, however it dies. A directory goes only if its lock
// can be taken and it is old enough (see staleAge, unlockedAge).
package spill

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

// Buckets is the number of spill buckets, and so the most sub-batches a
// shard is split into.
const Buckets = 64

// BufferSize is the write buffer of each spill bucket, and the read
// buffer; a spill made when memory is short has buffers as small as
// MinBuffer.
const (
	BufferSize = 16 << 10
	MinBuffer  = 4 << 10
)

// Spill directories are named dirPrefix + a random suffix, in os.TempDir.
// Each holds a lock file that its worker keeps locked (flock) for the
// spill's whole life; the kernel drops the lock when the worker dies,
// however it dies.
const (
	dirPrefix = "s3once-batch-"
	lockName  = "lock"
)

// staleAge is the age floor: a spill directory whose lock is free is
// removed only once its modification time is at least this old. It covers
// the instant between creating a directory and locking it, and clock steps.
const staleAge = 10 * time.Minute

// unlockedAge applies where the lock tells nothing: a directory with no
// lock file (made by a release before the lock, or by a worker killed
// between creating the directory and its lock file), and every directory on
// systems without flock. A live worker's spill is that old only if one
// shard takes a day to gather and write.
const unlockedAge = 24 * time.Hour

// Spill is a group's records on local disk: Buckets bucket files of
// length-prefixed (uvarint) records, in a directory of its own that the
// spill keeps locked until it is removed.
type Spill struct {
	dir    string
	lock   *os.File
	files  [Buckets]*os.File
	bufs   [Buckets]*bufio.Writer
	sizes  [Buckets]int64 // record bytes, prefixes left out
	counts [Buckets]int64 // records
	tmp    [binary.MaxVarintLen64]byte
}

// New makes a spill whose buckets have write buffers of bufSize bytes.
func New(bufSize int) (*Spill, error) {
	dir, err := os.MkdirTemp("", dirPrefix+"*")
	if err != nil {
		return nil, err
	}
	sp := &Spill{dir: dir}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		_ = sp.Remove()
		return nil, err
	}
	sp.lock = lock
	if err := lockFile(lock); err != nil && !errors.Is(err, errNoFileLocks) {
		_ = sp.Remove()
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	for i := range sp.files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("bucket-%02d", i)))
		if err != nil {
			_ = sp.Remove()
			return nil, err
		}
		sp.files[i] = f
		sp.bufs[i] = bufio.NewWriterSize(f, bufSize)
	}
	return sp, nil
}

// Add writes rec to the bucket Hash picks.
func (sp *Spill) Add(rec []byte) error {
	i := Hash(rec)
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

// Finish flushes and closes the bucket files.
func (sp *Spill) Finish() error {
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

// Size is the record bytes of buckets [from, to).
func (sp *Spill) Size(from, to int) int64 { return sum(sp.sizes[from:to]) }

// Count is the number of records of buckets [from, to).
func (sp *Spill) Count(from, to int) int64 { return sum(sp.counts[from:to]) }

func sum(v []int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}

// Read returns the records of buckets [from, to), copied into one block.
func (sp *Spill) Read(from, to int) ([][]byte, error) {
	arena := make([]byte, 0, sp.Size(from, to))
	var lines [][]byte
	for i := from; i < to; i++ {
		f, err := os.Open(filepath.Join(sp.dir, fmt.Sprintf("bucket-%02d", i)))
		if err != nil {
			return nil, err
		}
		r := bufio.NewReaderSize(f, BufferSize)
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

// Remove closes whatever is still open and deletes the directory. The lock
// is let go last, once the directory is gone.
func (sp *Spill) Remove() error {
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

// RemoveStale removes the spill directories in dir left by workers
// that died without removing them, and returns the ones it removed. A
// directory goes only if its lock can be taken (no live worker holds it) and
// it is older than staleAge, or, where no lock tells, older than
// unlockedAge. Entries it cannot judge or remove are skipped, and
// reported in the error; they are never a reason to remove anything else.
func RemoveStale(dir string, now time.Time) (removed []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		// A symbolic link or a file under the name is not a spill.
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dirPrefix) {
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
	if age < staleAge {
		return false, nil
	}
	lock, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return false, nil // another user's; not ours to judge
	case errors.Is(err, fs.ErrNotExist):
		if age < unlockedAge {
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
		if age < unlockedAge {
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

// Dir is the spill's directory.
func (sp *Spill) Dir() string { return sp.dir }

// SubBatches is the number of sub-batches a spilled group of total bytes
// is split into: the least power of two that makes them half of limit on
// average, at most Buckets. Sub-batch j of n is buckets [j*Buckets/n,
// (j+1)*Buckets/n).
func SubBatches(total, limit int64) int {
	half := max(limit/2, 1)
	need := (total + half - 1) / half
	n := 1
	for int64(n) < need && n < Buckets {
		n <<= 1
	}
	return n
}

// hashSalt sets Hash apart from output version 1's shard hash (a plain
// FNV-64a of the record): records of one shard share that hash modulo
// Shards, not this one. Version 2's shard hash is another function.
var hashSalt = [8]byte{'s', '3', 'o', 'n', 'c', 'e', 's', 'b'}

// Hash picks a record's spill bucket, 0 to Buckets-1: the top six bits of
// a salted FNV-64a of the record, mixed by the MurmurHash3 finaliser. It is
// the same in every process and every version that keeps the sub-batch
// layout.
func Hash(rec []byte) int {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, c := range hashSalt {
		h ^= uint64(c)
		h *= prime
	}
	for _, c := range rec {
		h ^= uint64(c)
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int(h >> 58)
}
