package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The scale plan (make bench-scale): not a comparison but a curve. It runs
// BenchmarkScalePipeline over a grid of record counts and shard counts and
// BenchmarkScaleStream over a range of file sizes, every cell as its own
// process once per round, then writes the median of each cell as a Markdown
// table (scale.md) and as a plot (scale.svg) beside the raw results
// (scale.txt, benchstat's format).

// scaleGrid is one size of the scale plan.
type scaleGrid struct {
	rounds  int
	records []string
	shards  []string
	sizes   []string
	// about is the expected duration on 2 quiet cores, for the usage text.
	about string
}

var scaleGrids = map[string]scaleGrid{
	// The whole grid: 1e5 to 1e7 records at 1, 4 and 16 shards, files of
	// 64 MiB to 4 GiB. The 1e7-record pipelines (1 GB each, 85 to 120 s a
	// run) take most of the time: 20 minutes for 3 rounds, measured.
	"full": {rounds: 3,
		records: []string{"100000", "1000000", "10000000"},
		shards:  []string{"1", "4", "16"},
		sizes:   []string{"64MiB", "256MiB", "1GiB", "4GiB"},
		about:   "about 20 minutes"},
	// The same curve one decade shorter: a few minutes (one round took 9
	// minutes under a load average of 14).
	"small": {rounds: 3,
		records: []string{"100000", "1000000"},
		shards:  []string{"1", "4", "16"},
		sizes:   []string{"64MiB", "256MiB", "1GiB"},
		about:   "a few minutes"},
}

func (sg scaleGrid) groups() []group {
	prefix := func(p string, vs []string) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = p + v
		}
		return out
	}
	return []group{
		{name: "scale", bench: "BenchmarkScalePipeline",
			dims: [][]string{prefix("records=", sg.records), prefix("shards=", sg.shards)}},
		{name: "scale", bench: "BenchmarkScaleStream",
			dims: [][]string{prefix("size=", sg.sizes)}},
	}
}

// runScale runs the scale plan of the named grid and writes its table and
// plot.
func runScale(bin, dir, out, gridName string, rounds int) error {
	sg, ok := scaleGrids[gridName]
	if !ok {
		return fmt.Errorf("no scale grid %q (full, small)", gridName)
	}
	if rounds <= 0 {
		rounds = sg.rounds
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	header := machine()
	file := filepath.Join(out, "scale.txt")
	if err := os.WriteFile(file, []byte(header), 0o644); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(out, "scale.log"))
	fmt.Fprintf(os.Stderr, "%sscale grid %q (%s on 2 quiet cores), %d rounds\n", header, gridName, sg.about, rounds)
	start := time.Now()
	for r := range rounds {
		for _, g := range sg.groups() {
			paths := g.runs()
			for i := range paths {
				p := paths[(i+r)%len(paths)]
				t0 := time.Now()
				if err := runOne(bin, dir, out, g, p); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "round %d/%d  %-60s %6.1fs  (%s total)\n",
					r+1, rounds, strings.Join(p, "/"), time.Since(t0).Seconds(), time.Since(start).Round(time.Second))
			}
		}
	}
	samples := map[string]map[string][]float64{}
	if err := parseFile(file, samples); err != nil {
		return err
	}
	c := scaleCurves(samples, sg)
	table := c.markdown(gridName, rounds, time.Since(start))
	if err := os.WriteFile(filepath.Join(out, "scale.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "scale.svg"), []byte(c.svg()), 0o644); err != nil {
		return err
	}
	os.Stdout.WriteString(table)
	return nil
}

// curves holds the medians of the scale plan's cells.
type curves struct {
	records, shards, sizes []string
	// pipe[records][shards][unit] and stream[size][unit] are medians.
	pipe   map[string]map[string]map[string]float64
	stream map[string]map[string]float64
}

func scaleCurves(samples map[string]map[string][]float64, sg scaleGrid) curves {
	c := curves{records: sg.records, shards: sg.shards, sizes: sg.sizes,
		pipe: map[string]map[string]map[string]float64{}, stream: map[string]map[string]float64{}}
	medians := func(name string) map[string]float64 {
		m := map[string]float64{}
		for unit, vs := range samples[name] {
			m[unit] = median(vs)
		}
		return m
	}
	for _, r := range sg.records {
		c.pipe[r] = map[string]map[string]float64{}
		for _, s := range sg.shards {
			c.pipe[r][s] = medians("BenchmarkScalePipeline/records=" + r + "/shards=" + s)
		}
	}
	for _, z := range sg.sizes {
		c.stream[z] = medians("BenchmarkScaleStream/size=" + z)
	}
	return c
}

func (c curves) markdown(grid string, rounds int, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Scale curve (grid %s, %d rounds, medians, %s)\n\n", grid, rounds, took.Round(time.Second))
	b.WriteString("Pipeline: sink.Write on prism, records of 100 bytes. sink-live is the largest live heap, as of a\n")
	b.WriteString("collection, of objects allocated under s3once's library code (heap profile), the elements it\n")
	b.WriteString("hands to prism's in-memory shuffle included; sink-held leaves those out: what the sink's DoFns\n")
	b.WriteString("hold themselves. proc-heap is the process's peak heap, prism's shuffle included.\n\n")
	b.WriteString("| records | shards | s/run | records/s | s per 1e6 records | sink-held MiB | sink-live MiB | proc-heap MiB |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range c.records {
		n, _ := strconv.ParseFloat(r, 64)
		for _, s := range c.shards {
			m := c.pipe[r][s]
			sec, ok := m["sec/op"]
			if !ok {
				fmt.Fprintf(&b, "| %s | %s | — | — | — | — | — | — |\n", r, s)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %.0f | %.2f | %s | %.1f | %.0f |\n",
				r, s, sec, m["records/s"], sec/(n/1e6), optional(m, "sink-held-MiB"), m["sink-live-MiB"], m["proc-heap-MiB"])
		}
	}
	b.WriteString("\nStream: one file through a fresh Writer (8 MiB parts, 4 in flight); the process's peak heap.\n\n")
	b.WriteString("| size | s/run | s/GiB | MB/s | heap MiB (with garbage) | live heap MiB |\n|---|---|---|---|---|---|\n")
	for _, z := range c.sizes {
		m := c.stream[z]
		sec, ok := m["sec/op"]
		if !ok {
			fmt.Fprintf(&b, "| %s | — | — | — | — | — |\n", z)
			continue
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.0f | %.1f | %.1f |\n", z, sec, m["s/GiB"], m["MB/s"], m["heap-MiB"], m["live-heap-MiB"])
	}
	return b.String()
}

// optional renders a median that results of earlier versions lack as a dash.
func optional(m map[string]float64, unit string) string {
	v, ok := m[unit]
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.1f", v)
}

// svg draws four panels: pipeline seconds and sink-held MiB against records
// (one line per shard count), and the stream's s/GiB and heap against file
// size. Axes of counts and sizes are logarithmic.
func (c curves) svg() string {
	const w, h = 900, 640
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

	var recX []float64
	for _, r := range c.records {
		v, _ := strconv.ParseFloat(r, 64)
		recX = append(recX, v)
	}
	pipeSeries := func(unit string) []series {
		var ss []series
		for i, s := range c.shards {
			se := series{label: "shards " + s, color: colors[i%len(colors)]}
			for j, r := range c.records {
				if v, ok := c.pipe[r][s][unit]; ok {
					se.x = append(se.x, recX[j])
					se.y = append(se.y, v)
				}
			}
			ss = append(ss, se)
		}
		return ss
	}
	var sizeX []float64
	for _, z := range c.sizes {
		sizeX = append(sizeX, sizeMiB(z))
	}
	streamSeries := func(units ...string) []series {
		var ss []series
		for i, unit := range units {
			se := series{label: unit, color: colors[i%len(colors)]}
			for j, z := range c.sizes {
				if v, ok := c.stream[z][unit]; ok {
					se.x = append(se.x, sizeX[j])
					se.y = append(se.y, v)
				}
			}
			ss = append(ss, se)
		}
		return ss
	}
	panel(&b, 0, 0, w/2, h/2, "Pipeline time (s) vs records", "records", true, true, pipeSeries("sec/op"))
	panel(&b, w/2, 0, w/2, h/2, "Heap the sink holds (MiB) vs records", "records", true, false, pipeSeries("sink-held-MiB"))
	panel(&b, 0, h/2, w/2, h/2, "Stream time per GiB (s) vs file size", "file size (MiB)", true, false, streamSeries("s/GiB"))
	panel(&b, w/2, h/2, w/2, h/2, "Stream peak heap (MiB) vs file size", "file size (MiB)", true, false, streamSeries("heap-MiB", "live-heap-MiB"))
	b.WriteString("</svg>\n")
	return b.String()
}

type series struct {
	label, color string
	x, y         []float64
}

// sizeMiB reads a size name (64MiB, 4GiB) as MiB.
func sizeMiB(z string) float64 {
	if v, ok := strings.CutSuffix(z, "GiB"); ok {
		f, _ := strconv.ParseFloat(v, 64)
		return f * 1024
	}
	f, _ := strconv.ParseFloat(strings.TrimSuffix(z, "MiB"), 64)
	return f
}

// panel draws one plot at (x0, y0) of size w x h.
func panel(b *strings.Builder, x0, y0, w, h int, title, xlabel string, logX, logY bool, ss []series) {
	const left, right, top, bottom = 60, 20, 30, 45
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	ox, oy := float64(x0+left), float64(y0+top)
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i := range s.x {
			xmin, xmax = math.Min(xmin, s.x[i]), math.Max(xmax, s.x[i])
			ymin, ymax = math.Min(ymin, s.y[i]), math.Max(ymax, s.y[i])
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+left, y0+18, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", ox, oy, pw, ph)
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="#999">no data</text>`+"\n", ox+pw/2-20, oy+ph/2)
		return
	}
	if !logY {
		ymin = 0
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	tx := func(v float64) float64 { return v }
	if logX {
		tx = math.Log10
	}
	ty := func(v float64) float64 { return v }
	if logY {
		ty = func(v float64) float64 { return math.Log10(math.Max(v, 1e-9)) }
	}
	fx0, fx1 := tx(xmin), tx(xmax)
	if fx1 == fx0 {
		fx0, fx1 = fx0-1, fx1+1
	}
	fy0, fy1 := ty(ymin), ty(ymax)
	pad := (fy1 - fy0) * 0.08
	fy0, fy1 = fy0-pad, fy1+pad
	if !logY {
		fy0 = math.Max(fy0, 0)
	}
	if fy1 == fy0 {
		fy1 = fy0 + 1
	}
	px := func(v float64) float64 { return ox + 10 + (tx(v)-fx0)/(fx1-fx0)*(pw-20) }
	py := func(v float64) float64 { return oy + ph - (ty(v)-fy0)/(fy1-fy0)*ph }
	// x ticks at the data's x values, y ticks at five levels.
	var xs []float64
	seen := map[float64]bool{}
	for _, s := range ss {
		for _, v := range s.x {
			if !seen[v] {
				seen[v] = true
				xs = append(xs, v)
			}
		}
	}
	sort.Float64s(xs)
	for _, v := range xs {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", px(v), oy, px(v), oy+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(v), oy+ph+14, tick(v))
	}
	for i := 0; i <= 4; i++ {
		f := fy0 + (fy1-fy0)*float64(i)/4
		v := f
		if logY {
			v = math.Pow(10, f)
		}
		y := oy + ph - float64(i)/4*ph
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", ox, y, ox+pw, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", ox-4, y+4, tick(v))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", ox+pw/2, oy+ph+32, html.EscapeString(xlabel))
	for i, s := range ss {
		var pts []string
		for j := range s.x {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.x[j]), py(s.y[j])))
		}
		if len(pts) > 0 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.color)
			for j := range s.x {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(s.x[j]), py(s.y[j]), s.color)
			}
		}
		ly := oy + 14 + float64(i)*14
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", ox+8, ly-4, ox+24, ly-4, s.color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", ox+28, ly, html.EscapeString(s.label))
	}
}

// tick renders an axis value briefly: 1e+06 as 1M, 4096 as 4096.
func tick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6 && math.Mod(a, 1e6) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3 && math.Mod(a, 1e3) == 0 && a < 1e6 && math.Mod(a, 1024) != 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
