package benchkit

import (
	"bytes"
	"io"
	"testing"
	"time"
)

func TestPatternReadAndNextAgree(t *testing.T) {
	const size = 3*BlockSize + 12345
	read, err := io.ReadAll(NewPattern(size))
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != size {
		t.Fatalf("Read yields %d bytes, want %d", len(read), size)
	}
	var next []byte
	p := NewPattern(size)
	for s := p.Next(300_000); len(s) > 0; s = p.Next(300_000) {
		if len(s) > 300_000 {
			t.Fatalf("Next returned %d bytes, asked for at most 300000", len(s))
		}
		next = append(next, s...)
	}
	if !bytes.Equal(read, next) {
		t.Fatal("Read and Next yield different bytes")
	}
	if !bytes.Equal(read[:BlockSize], read[BlockSize:2*BlockSize]) {
		t.Fatal("the pattern does not repeat its block")
	}
	if !bytes.Equal(Fill(make([]byte, 5000)), read[:5000]) {
		t.Fatal("Fill differs from the pattern's start")
	}
}

func TestMemoryProbes(t *testing.T) {
	rss, err := PeakRSS()
	if err != nil {
		t.Skip(err) // not Linux
	}
	if rss < 1<<20 {
		t.Fatalf("peak RSS %d bytes, implausibly small", rss)
	}
	h := StartHeapSampler(time.Millisecond)
	keep := make([]byte, 8<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	time.Sleep(5 * time.Millisecond)
	peak := h.Stop()
	if peak.Objects < uint64(len(keep)) {
		t.Fatalf("sampled heap peak %d bytes, below the %d held", peak.Objects, len(keep))
	}
	_ = keep[len(keep)-1]
}
