package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// TestScaleOutputs: the table has a row per cell, a missing cell shows as a
// dash, and the plot is well-formed SVG with a line per shard count.
func TestScaleOutputs(t *testing.T) {
	sg := scaleGrids["small"]
	samples := map[string]map[string][]float64{}
	for _, r := range sg.records {
		for _, s := range sg.shards {
			if r == "1000000" && s == "16" {
				continue // a cell that did not run
			}
			samples["BenchmarkScalePipeline/records="+r+"/shards="+s] = map[string][]float64{
				"sec/op": {1, 2, 3}, "records/s": {1e5}, "sink-live-MiB": {70, 72}, "sink-held-MiB": {50}, "proc-heap-MiB": {300},
			}
		}
	}
	for _, z := range sg.sizes {
		samples["BenchmarkScaleStream/size="+z] = map[string][]float64{"sec/op": {0.5}, "s/GiB": {2.1}, "heap-MiB": {45}, "live-heap-MiB": {42}, "MB/s": {500}}
	}
	c := scaleCurves(samples, sg)
	md := c.markdown("small", 3, 0)
	if got := strings.Count(md, "\n| 100000 |") + strings.Count(md, "\n| 1000000 |"); got != len(sg.records)*len(sg.shards) {
		t.Errorf("table has %d pipeline rows, want %d:\n%s", got, len(sg.records)*len(sg.shards), md)
	}
	if !strings.Contains(md, "| 1000000 | 16 | — |") {
		t.Errorf("a missing cell is not marked:\n%s", md)
	}
	if !strings.Contains(md, "| 100000 | 1 | 2.00 |") || !strings.Contains(md, "| 50.0 | 71.0 | 300 |") {
		t.Errorf("a cell's median is not in the table:\n%s", md)
	}
	svg := c.svg()
	d := xml.NewDecoder(strings.NewReader(svg))
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	// Two pipeline panels with a line per shard count, two stream panels
	// with one and two lines.
	if want := 2*len(sg.shards) + 3; lines != want {
		t.Errorf("the plot has %d lines, want %d", lines, want)
	}
}
