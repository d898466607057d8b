package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// procsSuffix is the -GOMAXPROCS suffix of a benchmark name.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseFile adds the samples of a benchmark result file to samples, by
// benchmark name (without the suffix) and unit. sec/op is derived from ns/op.
func parseFile(file string, samples map[string]map[string][]float64) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %w", file, sc.Text(), err)
			}
			unit := fields[i+1]
			if unit == "ns/op" {
				unit, v = "sec/op", v/1e9
			}
			samples[name][unit] = append(samples[name][unit], v)
		}
	}
	return sc.Err()
}

// confidence is the level wanted of every interval.
const confidence = 0.95

// summary renders every check whose benchmarks were run as a Markdown table.
func summary(samples map[string]map[string][]float64) string {
	var b strings.Builder
	b.WriteString("## Summary\n\n")
	fmt.Fprintf(&b, "Ratios are test/base (for throughput: test's throughput over base's), with a %.0f%% distribution-free interval\n", confidence*100)
	b.WriteString("(Hodges-Lehmann, the interval of benchstat's Mann-Whitney U test; its exact level in brackets).\n")
	b.WriteString("Ratios measured in turns within each run (\"in turns\") are the median over the runs, with the sign test's\n")
	b.WriteString("interval for the median.\n")
	b.WriteString("A goal is met only when the whole interval clears it.\n\n")
	b.WriteString("| check | n | ratio or value | interval | goal | met |\n|---|---|---|---|---|---|\n")
	for _, c := range checks() {
		test := samples[c.test][c.unit]
		if len(test) == 0 {
			continue
		}
		goal := "—"
		if c.op != "" {
			goal = fmt.Sprintf("%s %s", c.op, format(c.goal))
		}
		if c.inRun {
			// Ratios measured within each run: their median's interval.
			est, lo, hi, level := medianCI(test, confidence)
			fmt.Fprintf(&b, "| %s | %d | %s (median %s) | [%s, %s] (%.1f%%, sign test) | %s | %s |\n",
				c.title, len(test), format(est), c.unit, format(lo), format(hi), level*100, goal, c.met(lo, hi))
			continue
		}
		if c.base == "" {
			// A bound on the values themselves.
			s := slices.Sorted(slices.Values(test))
			fmt.Fprintf(&b, "| %s | %d | median %s %s | min %s, max %s | %s | %s |\n",
				c.title, len(s), format(median(s)), c.unit, format(s[0]), format(s[len(s)-1]), goal, c.met(s[0], s[len(s)-1]))
			continue
		}
		base := samples[c.base][c.unit]
		if len(base) == 0 {
			continue
		}
		var est, lo, hi, level float64
		if c.throughput {
			// Throughput is bytes (or records) over time: its ratio is the
			// inverse of the ratio of times.
			est, lo, hi, level = ratioCI(test, base, confidence)
		} else {
			est, lo, hi, level = ratioCI(base, test, confidence)
		}
		unit := c.unit
		if c.throughput {
			unit = "throughput"
		}
		fmt.Fprintf(&b, "| %s | %d+%d | %s (%s) | [%s, %s] (%.1f%%) | %s | %s |\n",
			c.title, len(base), len(test), format(est), unit, format(lo), format(hi), level*100, goal, c.met(lo, hi))
	}
	return b.String()
}

// met is the summary's verdict on c for an interval [lo, hi] (for a bound,
// the smallest and largest values): the whole of it must clear the goal.
func (c check) met(lo, hi float64) string {
	switch {
	case c.op == "":
		return "—"
	case c.op == ">=" && lo >= c.goal || c.op == "<=" && hi <= c.goal:
		return "yes"
	}
	return "**no**"
}

func format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "?"
	case v == math.Trunc(v) && math.Abs(v) < 1e6:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
