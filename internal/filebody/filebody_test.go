package filebody

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

// brackets is a compressor whose members show in its output: "[" when one
// starts, "]" when it ends. With reset, one writer serves every member.
type brackets struct {
	reset   bool
	started int
}

type bracketWriter struct {
	w     io.Writer
	b     *brackets
	fresh bool
}

func (c *brackets) NewWriter(w io.Writer) (io.WriteCloser, error) {
	c.started++
	if c.reset {
		return &resettable{bracketWriter{w: w, b: c, fresh: true}}, nil
	}
	return &bracketWriter{w: w, b: c, fresh: true}, nil
}

func (m *bracketWriter) Write(p []byte) (int, error) {
	if m.fresh {
		m.fresh = false
		if _, err := m.w.Write([]byte("[")); err != nil {
			return 0, err
		}
	}
	return m.w.Write(p)
}

func (m *bracketWriter) Close() error {
	if m.fresh {
		_, err := m.w.Write([]byte("[]"))
		return err
	}
	_, err := m.w.Write([]byte("]"))
	return err
}

type resettable struct{ bracketWriter }

func (r *resettable) Reset(w io.Writer) { r.w, r.fresh = w, true }

func noFail(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }

// TestLines: a line format's file is its header, then its records, one
// compressed member per stretch between sync points; a compressor that
// resets serves every member; a resumed file goes on in a new member; a
// body left half-way never lends its member to the next file; a line
// body summarizes nothing.
func TestLines(t *testing.T) {
	for _, reset := range []bool{false, true} {
		c := &brackets{reset: reset}
		k := Lines(c, []byte("h\n"))
		var out bytes.Buffer
		b, err := k.Open(&out, noFail)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range []string{"a\n", "b\n", "c\n"} {
			if err := b.Write([]byte(rec)); err != nil {
				t.Fatal(err)
			}
			if b.Synced() {
				t.Fatal("synced with a member open")
			}
			if i != 1 {
				if err := b.Sync(); err != nil || !b.Synced() {
					t.Fatalf("sync: %v", err)
				}
			}
		}
		if err := b.Sync(); err != nil { // nothing open: nothing written
			t.Fatal(err)
		}
		if err := b.Finish(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), "[h\na\n][b\nc\n]"; got != want {
			t.Fatalf("reset %v: file %q, want %q", reset, got, want)
		}
		if s := b.Summary(); s.SplitOffsets != nil || s.Columns != nil {
			t.Fatalf("a line body summarizes %+v", s)
		}
		if want := map[bool]int{false: 2, true: 1}[reset]; c.started != want {
			t.Fatalf("reset %v: %d writers made, want %d", reset, c.started, want)
		}

		// Resumed after a sync point: a new member, no header.
		out.Reset()
		b, err = k.Resume(context.Background(), &out, Point{Upload: "u"}, noFail)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Write([]byte("d\n")); err != nil {
			t.Fatal(err)
		}
		// Left half-way: the member stays open and is never reused.
		b.Leave("u")
		before := c.started
		out.Reset()
		b, err = k.Open(&out, noFail)
		if err != nil || b.Finish() != nil {
			t.Fatalf("open after a left body: %v", err)
		}
		if c.started != before+1 || out.String() != "[h\n]" {
			t.Fatalf("reset %v: after a left body, %d writers made (want %d) and %q written", reset, c.started, before+1, out.String())
		}
	}
}

// TestLinesFail: errors name the file through the Fail the body was opened
// with.
func TestLinesFail(t *testing.T) {
	broken := errors.New("broken")
	k := Lines(&brackets{}, nil)
	b, err := k.Open(failingWriter{broken}, func(what string, err error) error { return fmt.Errorf("file f: %s: %w", what, err) })
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write([]byte("a\n")); !errors.Is(err, broken) || err.Error() != "file f: write: broken" {
		t.Fatalf("write: %v", err)
	}
	var stale Stale = "the records give other bytes"
	var target Stale
	if err := fmt.Errorf("recover: %w", stale); !errors.As(err, &target) || target != stale {
		t.Fatalf("a wrapped Stale is not found: %v", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }
