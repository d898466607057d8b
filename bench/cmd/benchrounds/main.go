// Command benchrounds runs the benchmarks of package bench side by side and
// compares the sides.
//
// Every side of a comparison is a sub-benchmark. benchrounds runs each one as
// its own process of a prebuilt test binary (go test -c), once per round,
// for several rounds, rotating the order of the sides from one round to the
// next; so the sides share whatever else the machine is doing at the time
// instead of one side getting a quiet minute and the other a busy one. The
// results go to one file per benchmark under the output folder, in the
// format benchstat reads. It then prints benchstat's tables and a summary:
// each ratio with its confidence interval and whether its goal is met (only
// when the whole interval clears the goal).
//
// Usage:
//
//	go test -c -o bench-out/bench.test ./bench
//	go run ./bench/cmd/benchrounds -bin bench-out/bench.test -dir bench \
//		-out bench-out -plan full -benchstat .bin/benchstat
//
// A group of the sink package's own benchmarks (the partition check) runs
// from the sink's test binary, named by -sinkbin and run in -sinkdir:
//
//	go test -c -o bench-out/sink.test ./sink
//	go run ./bench/cmd/benchrounds ... -sinkbin bench-out/sink.test -sinkdir sink
//
// and the table commit's (package icebergtable, which links iceberg-go)
// from its own, named by -icebergbin and run in -icebergdir.
//
// -plan scale runs the scale curve instead (make bench-scale; see scale.go):
// -grid small or full.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "", "the test binary of package bench (go test -c)")
	dir := flag.String("dir", ".", "the folder the test binary runs in")
	out := flag.String("out", "bench-out", "the folder for the results")
	planName := flag.String("plan", "quick", "what to run: full, stream, quick or scale")
	rounds := flag.Int("rounds", 0, "rounds (0: the plan's)")
	benchstat := flag.String("benchstat", "benchstat", "the benchstat executable")
	grid := flag.String("grid", "small", "with -plan scale: the grid, full or small (see scale.go)")
	sinkBin := flag.String("sinkbin", "", "the test binary of package sink, for the plan's sink groups")
	sinkDir := flag.String("sinkdir", "sink", "the folder the sink's test binary runs in")
	icebergBin := flag.String("icebergbin", "", "the test binary of package icebergtable, for the plan's table groups")
	icebergDir := flag.String("icebergdir", "icebergtable", "the folder the icebergtable test binary runs in")
	flag.Parse()
	err := errors.New("-bin is required")
	if *bin != "" {
		// The binary runs in -dir: a relative path must not be read from there.
		*bin, err = filepath.Abs(*bin)
	}
	if err == nil && *sinkBin != "" {
		*sinkBin, err = filepath.Abs(*sinkBin)
	}
	if err == nil && *icebergBin != "" {
		*icebergBin, err = filepath.Abs(*icebergBin)
	}
	switch {
	case err != nil:
	case *planName == "scale":
		err = runScale(*bin, *dir, *out, *grid, *rounds)
	default:
		err = run(binaries{"": {*bin, *dir}, "sink": {*sinkBin, *sinkDir}, "icebergtable": {*icebergBin, *icebergDir}}, *out, *planName, *rounds, *benchstat)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrounds:", err)
		os.Exit(1)
	}
}

// binary is a test binary and the folder it runs in.
type binary struct{ path, dir string }

// binaries are the test binaries by the package a group names ("" for
// package bench).
type binaries map[string]binary

func run(bins binaries, out, planName string, rounds int, benchstat string) error {
	plan, ok := plans[planName]
	if !ok {
		return fmt.Errorf("no plan %q (full, stream, quick; or scale)", planName)
	}
	for _, g := range plan.groups {
		if bins[g.pkg].path == "" {
			return fmt.Errorf("the plan's group %s runs package %s's benchmarks: name its test binary (-sinkbin, -icebergbin)", g.name, g.pkg)
		}
	}
	if rounds <= 0 {
		rounds = plan.rounds
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	header := machine()
	for _, g := range plan.groups {
		if err := os.WriteFile(filepath.Join(out, g.name+".txt"), []byte(header), 0o644); err != nil {
			return err
		}
		_ = os.Remove(filepath.Join(out, g.name+".log"))
	}
	fmt.Fprint(os.Stderr, header)
	start := time.Now()
	for r := range rounds {
		for _, g := range plan.groups {
			paths := g.runs()
			for i := range paths {
				p := paths[(i+r)%len(paths)] // rotate the order every round
				t0 := time.Now()
				if err := runOne(bins[g.pkg].path, bins[g.pkg].dir, out, g, p); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "round %d/%d  %-60s %6.1fs  (%s total)\n",
					r+1, rounds, strings.Join(p, "/"), time.Since(t0).Seconds(), time.Since(start).Round(time.Second))
			}
		}
	}
	var report bytes.Buffer
	for _, g := range plan.groups {
		file := filepath.Join(out, g.name+".txt")
		for _, args := range g.benchstat {
			cmd := exec.Command(benchstat, append(args, file)...)
			table, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("benchstat %s: %w\n%s", strings.Join(args, " "), err, table)
			}
			fmt.Fprintf(&report, "## %s: benchstat %s %s\n\n%s\n", g.name, strings.Join(quoteArgs(args), " "), file, table)
		}
	}
	samples := map[string]map[string][]float64{}
	for _, g := range plan.groups {
		if err := parseFile(filepath.Join(out, g.name+".txt"), samples); err != nil {
			return err
		}
	}
	report.WriteString(summary(samples))
	fmt.Fprintf(&report, "\n%d rounds in %s.\n", rounds, time.Since(start).Round(time.Second))
	if err := os.WriteFile(filepath.Join(out, "report.md"), report.Bytes(), 0o644); err != nil {
		return err
	}
	os.Stdout.Write(report.Bytes())
	return nil
}

// runOne runs one sub-benchmark once and appends its result line to the
// group's file; everything else it prints goes to the group's log.
func runOne(bin, dir, out string, g group, path []string) error {
	var re []string
	for _, p := range path {
		re = append(re, "^"+regexp.QuoteMeta(p)+"$")
	}
	args := []string{
		"-test.run=^$", "-test.bench=" + strings.Join(re, "/"),
		"-test.benchtime=" + g.benchtime(path), "-test.count=1", "-test.benchmem",
		"-test.timeout=30m",
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout bytes.Buffer
	logf, err := os.OpenFile(filepath.Join(out, g.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "### %s %s\n", bin, strings.Join(args, " "))
	cmd.Stdout = io.MultiWriter(&stdout, logf)
	cmd.Stderr = logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s\n(see %s)", strings.Join(path, "/"), err, lastLines(stdout.String(), 30), logf.Name())
	}
	var results []string
	for line := range strings.Lines(stdout.String()) {
		if strings.HasPrefix(line, "Benchmark") && strings.Contains(line, "/op") {
			results = append(results, line)
		}
	}
	if len(results) != 1 {
		return fmt.Errorf("%s: %d result lines, want 1:\n%s", strings.Join(path, "/"), len(results), stdout.String())
	}
	f, err := os.OpenFile(filepath.Join(out, g.name+".txt"), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(results[0])
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ()@") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}

// machine describes the machine as benchmark configuration lines.
func machine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\n", runtime.GOOS, runtime.GOARCH)
	if model := firstField("/proc/cpuinfo", "model name"); model != "" {
		fmt.Fprintf(&b, "cpu: %s\n", model)
	}
	fmt.Fprintf(&b, "cores: %d\n", runtime.NumCPU())
	if mem := firstField("/proc/meminfo", "MemTotal"); mem != "" {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(mem, " kB"), 64); err == nil {
			fmt.Fprintf(&b, "memory: %.1f GiB\n", kb/(1<<20))
		}
	}
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	return b.String()
}

// firstField returns the value of the first "key : value" line of a /proc file.
func firstField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
