package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeapSampler records the largest Go heap seen while it runs, by sampling
// runtime/metrics: the bytes of heap objects (live or not yet swept), and the
// live heap the last garbage collection marked.
type HeapSampler struct {
	stop chan struct{}
	done sync.WaitGroup

	mu          sync.Mutex
	objects     uint64
	live        uint64
	collections uint64
}

// StartHeapSampler samples every interval until Stop.
func StartHeapSampler(every time.Duration) *HeapSampler {
	h := &HeapSampler{stop: make(chan struct{})}
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	var first uint64
	read := func() {
		metrics.Read(samples)
		h.mu.Lock()
		h.objects = max(h.objects, samples[0].Value.Uint64())
		h.live = max(h.live, samples[1].Value.Uint64())
		h.collections = samples[2].Value.Uint64() - first
		h.mu.Unlock()
	}
	metrics.Read(samples)
	first = samples[2].Value.Uint64()
	read()
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return h
}

// HeapPeak is what a HeapSampler saw.
type HeapPeak struct {
	// Objects is the largest number of bytes in heap objects, reachable or
	// not yet collected.
	Objects uint64
	// Live is the largest live heap a garbage collection marked.
	Live uint64
	// Collections is the number of garbage collections while sampling.
	Collections uint64
}

// Stop ends the sampling and returns the peaks.
func (h *HeapSampler) Stop() HeapPeak {
	close(h.stop)
	h.done.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return HeapPeak{Objects: h.objects, Live: h.live, Collections: h.collections}
}

// PeakRSS returns the process's peak resident set size (VmHWM), in bytes.
// It works on Linux only.
func PeakRSS() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("peak RSS: unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	return 0, fmt.Errorf("peak RSS: no VmHWM in /proc/self/status")
}
