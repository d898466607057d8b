package main

import "fmt"

// group is one benchmark function and the sub-benchmarks to run of it: the
// cross product of dims, each run once per round as its own process.
type group struct {
	name  string     // file stem under the output folder
	bench string     // the benchmark function
	pkg   string     // the package of the benchmark: "" for bench, "sink" or "icebergtable"
	dims  [][]string // sub-benchmark names, one list per level
	// times gives the -benchtime of the runs whose path holds the key;
	// the others run once ("1x").
	times map[string]string
	// benchstat holds the arguments of each benchstat table of the group,
	// the input file aside.
	benchstat [][]string
}

// runs returns the sub-benchmark paths of g, in order.
func (g group) runs() [][]string {
	paths := [][]string{{g.bench}}
	for _, level := range g.dims {
		var next [][]string
		for _, p := range paths {
			for _, v := range level {
				next = append(next, append(append([]string(nil), p...), v))
			}
		}
		paths = next
	}
	return paths
}

func (g group) benchtime(path []string) string {
	for _, p := range path {
		if t, ok := g.times[p]; ok {
			return t
		}
	}
	return "1x"
}

// plans are what `make bench` (full), `make bench-stream` (stream) and
// `make bench-quick` (quick) run.
var plans = map[string]struct {
	rounds int
	groups []group
}{
	"full": {6, append([]group{
		uploadGroup([]string{"size=64MiB", "size=256MiB", "size=1GiB"}, map[string]string{"size=64MiB": "3x"}),
		turnsGroup([]string{"size=64MiB", "size=256MiB", "size=1GiB"}, turnsTimes),
		checkpointGroup("size=1GiB"),
		memoryGroup("size=256MiB", "size=2GiB"),
		persistGroup("20x"),
		recoverGroup("20x"),
		pipelineGroup("records=100000", "records=1000000"),
		floorGroup("records=100000", "records=1000000"),
		parquetGroup("records=100000", "records=1000000"),
		partitionCheckGroup("files=10000", "files=1000000"),
		tableCommitGroup(),
	}, tableAgingGroups()...)},
	// The stream's checks alone (make bench-stream), in twice the full
	// plan's rounds: its ratios against the ceiling sit near their goal, and
	// an interval narrow enough to clear it takes more rounds than the full
	// plan can spend on every group.
	"stream": {12, []group{
		uploadGroup([]string{"size=64MiB", "size=256MiB", "size=1GiB"}, map[string]string{"size=64MiB": "3x"}),
		turnsGroup([]string{"size=64MiB", "size=256MiB", "size=1GiB"}, turnsTimes),
		memoryGroup("size=256MiB", "size=2GiB"),
	}},
	"quick": {5, []group{
		uploadGroup([]string{"size=64MiB"}, nil),
		turnsGroup([]string{"size=64MiB"}, map[string]string{"size=64MiB": "4x"}),
		checkpointGroup("size=256MiB"),
		memoryGroup("size=256MiB"),
		persistGroup("5x"),
		recoverGroup("5x"),
		pipelineGroup("records=100000"),
		floorGroup("records=100000"),
		parquetGroup("records=100000"),
		partitionCheckGroup("files=10000"),
	}},
}

// turnsTimes: 16 operations of 64 MiB (64 files, about 12 s), 8 of 256 MiB
// (32 files, about 22 s) and 8 of 1 GiB (32 files, about 85 s), each
// operation a file through each of the four sides. A pilot of 12 rounds
// with three sides and 6, 3 and 3 operations found the runs' ratios spread
// by 3.7%, 4.0% and 3.2% (standard deviation of their logarithms), against
// margins of about 1.5%, 3% and 4% between the medians and the goal; a
// run's spread narrows with the square root of its operations. With 18, 6
// and 3 they spread by 2.6%, 2.4% and 4.6%, so 1 GiB got 6; with the
// uploader as a fourth side, the counts are multiples of four.
var turnsTimes = map[string]string{"size=64MiB": "16x", "size=256MiB": "8x", "size=1GiB": "8x"}

func uploadGroup(sizes []string, times map[string]string) group {
	return group{
		name: "upload", bench: "BenchmarkUpload",
		dims:  [][]string{sizes, {"side=stream", "side=uploader", "side=uploader-crc64", "side=ceiling", "side=copy-ceiling"}},
		times: times,
		benchstat: [][]string{
			{"-col", "/side@(uploader stream)"},
			{"-col", "/side@(uploader-crc64 stream)"},
			{"-col", "/side@(ceiling stream)"},
			{"-col", "/side@(copy-ceiling stream)"},
			{"-col", "/side@(ceiling copy-ceiling)"},
		},
	}
}

// turnSides is the number of sides BenchmarkUploadInTurns writes through
// (the bench package's turnSides).
const turnSides = 4

// turnsGroup runs BenchmarkUploadInTurns: the stream, both ceilings and
// manager.Uploader in turns within each process, each operation one file
// through each side. Every side must take each place in the order equally
// often in a run: times are multiples of turnSides operations.
func turnsGroup(sizes []string, times map[string]string) group {
	return group{
		name: "turns", bench: "BenchmarkUploadInTurns",
		dims:      [][]string{sizes},
		times:     times,
		benchstat: [][]string{{}},
	}
}

func checkpointGroup(size string) group {
	return group{
		name: "checkpoint", bench: "BenchmarkCheckpointOverhead",
		dims:      [][]string{{size}, {"side=never", "side=1s", "side=100ms"}},
		benchstat: [][]string{{"-col", "/side@(never 1s 100ms)"}},
	}
}

func memoryGroup(sizes ...string) group {
	return group{
		name: "memory", bench: "BenchmarkPeakMemory",
		dims:      [][]string{sizes},
		benchstat: [][]string{{"-col", "/size@(256MiB 2GiB)"}},
	}
}

func persistGroup(times string) group {
	return group{
		name: "persist", bench: "BenchmarkPersist",
		dims:      [][]string{{"parts=10", "parts=1000", "parts=10000"}},
		times:     map[string]string{"BenchmarkPersist": times},
		benchstat: [][]string{{"-col", "/parts@(10 1000 10000)"}},
	}
}

func recoverGroup(times string) group {
	return group{
		name: "recover", bench: "BenchmarkRecover",
		dims:      [][]string{{"tail=0", "tail=1MiB", "tail=8MiB-1"}},
		times:     map[string]string{"BenchmarkRecover": times},
		benchstat: [][]string{{"-col", "/tail@(0 1MiB 8MiB-1)"}},
	}
}

func pipelineGroup(records ...string) group {
	return group{
		name: "pipeline", bench: "BenchmarkPipeline",
		dims:      [][]string{records, {"side=sink", "side=textio"}},
		benchstat: [][]string{{"-col", "/side@(textio sink)"}},
	}
}

// floorSides is the number of sides BenchmarkPipelineFloor runs in turns
// (the bench package's floorSides).
const floorSides = 6

// floorGroup runs BenchmarkPipelineFloor: sink.Write (with and without
// gzip) against the floor, the naive shuffle and the packed shuffles, in
// turns within each process, floorSides operations (each a pipeline of
// every side) a run, so that every side takes each place in the order
// once.
func floorGroup(records ...string) group {
	times := map[string]string{}
	for _, r := range records {
		times[r] = fmt.Sprintf("%dx", floorSides)
	}
	return group{
		name: "floor", bench: "BenchmarkPipelineFloor",
		dims:      [][]string{records},
		times:     times,
		benchstat: [][]string{{}},
	}
}

// parquetGroup compares Parquet through sink.Write with Beam's
// parquetio.Write.
func parquetGroup(records ...string) group {
	return group{
		name: "parquet", bench: "BenchmarkParquetPipeline",
		dims:      [][]string{records, {"side=sink", "side=parquetio"}},
		benchstat: [][]string{{"-col", "/side@(parquetio sink)"}},
	}
}

// partitionCheckGroup measures the barrier's partition check (the sink
// package's BenchmarkPartitionCheck): one check of a rerun per run, its
// files over 100 partitions in the in-memory S3. At 10^6 files one check
// takes about 15 s of CPU time (a thousand listings parsed by the SDK).
func partitionCheckGroup(files ...string) group {
	return group{
		name: "partition", bench: "BenchmarkPartitionCheck", pkg: "sink",
		dims:      [][]string{files},
		benchstat: [][]string{{"-col", "/files"}},
	}
}

// tableCommitGroup measures an Iceberg table commit against the writing
// of its window's files (the icebergtable package's BenchmarkTableCommit):
// 3 windows of 64 MiB a run, on a table with 1,000 earlier snapshots
// (setting those up takes about a minute of each run).
func tableCommitGroup() group {
	return group{
		name: "table", bench: "BenchmarkTableCommit", pkg: "icebergtable",
		times:     map[string]string{"BenchmarkTableCommit": "3x"},
		benchstat: [][]string{{}},
	}
}

// tableAgingGroups measure the table as it ages and under catalog
// latency (package icebergtable): a commit at 100, 1,000 and 10,000
// snapshots (BenchmarkCommitAging, 10 commits each, about a minute), a
// commit after expiry of 10,000 snapshots against a fresh table's
// (BenchmarkCommitAfterExpiry, 10 of each; its expiry takes about a
// minute), a streaming pipeline under catalog latency
// (BenchmarkCatalogLatency, four latencies of about 15 s each) and the
// peer's record shape (BenchmarkPeerShape, 3 runs of 200,000 records).
func tableAgingGroups() []group {
	var gs []group
	for _, b := range []struct{ name, bench, times string }{
		{"table-aging", "BenchmarkCommitAging", "10x"},
		{"table-expiry", "BenchmarkCommitAfterExpiry", "10x"},
		{"table-latency", "BenchmarkCatalogLatency", "1x"},
		{"table-peer", "BenchmarkPeerShape", "3x"},
	} {
		gs = append(gs, group{name: b.name, bench: b.bench, pkg: "icebergtable",
			times: map[string]string{b.bench: b.times}, benchstat: [][]string{{}}})
	}
	return gs
}

// A check is one line of the summary: a ratio between two benchmarks with
// its interval, or a bound on one benchmark's values, and the goal it meets
// or misses.
type check struct {
	title string
	// base and test are benchmark names without the GOMAXPROCS suffix; base
	// is empty for a bound.
	base, test string
	unit       string
	// higher: a larger value is better and the ratio is of throughputs
	// (sec/op is inverted); otherwise the ratio is test/base as measured.
	throughput bool
	// op and goal: the ratio (or, for a bound, every value) must be >= or
	// <= goal; op "" means no goal (information only).
	op   string
	goal float64
	// inRun: test's values are ratios that one run measured between sides
	// in turns (base is empty); the check is on their median, with the
	// sign test's interval, and the goal is met when that clears it.
	inRun bool
}

func checks() []check {
	var cs []check
	for _, size := range []string{"64MiB", "256MiB", "1GiB"} {
		u := "BenchmarkUpload/size=" + size + "/side="
		cs = append(cs,
			check{title: "Stream vs manager.Uploader, " + size + ": throughput", base: u + "uploader", test: u + "stream", unit: "sec/op", throughput: true, op: ">=", goal: 1.0},
			check{title: "Stream vs manager.Uploader, " + size + ": B/MiB", base: u + "uploader", test: u + "stream", unit: "B/MiB"},
			check{title: "Stream vs manager.Uploader sending CRC64NVME, " + size + ": throughput", base: u + "uploader-crc64", test: u + "stream", unit: "sec/op", throughput: true, op: ">=", goal: 1.0},
			check{title: "Stream vs ceiling, " + size + ": throughput", base: u + "ceiling", test: u + "stream", unit: "sec/op", throughput: true, op: ">=", goal: 0.95},
			// Information: the stream's own overhead over the least a
			// writer fed by Write calls must do, and what that least
			// (copy, checksum, listing) costs against the ceiling.
			check{title: "Stream vs copy ceiling, " + size + ": throughput", base: u + "copy-ceiling", test: u + "stream", unit: "sec/op", throughput: true},
			check{title: "Copy ceiling vs ceiling, " + size + ": throughput", base: u + "ceiling", test: u + "copy-ceiling", unit: "sec/op", throughput: true},
		)
	}
	for _, size := range []string{"64MiB", "256MiB", "1GiB"} {
		t := "BenchmarkUploadInTurns/size=" + size
		cs = append(cs,
			check{title: "Stream vs ceiling in turns, " + size + ": throughput", test: t, unit: "stream/ceiling", inRun: true, op: ">=", goal: 0.95},
			check{title: "Stream vs copy ceiling in turns, " + size + ": throughput", test: t, unit: "stream/copy-ceiling", inRun: true},
			check{title: "Copy ceiling vs ceiling in turns, " + size + ": throughput", test: t, unit: "copy-ceiling/ceiling", inRun: true},
			check{title: "Stream vs manager.Uploader in turns, " + size + ": throughput", test: t, unit: "stream/uploader", inRun: true, op: ">=", goal: 1.0},
		)
	}
	cs = append(cs,
		check{title: "Stream B/MiB, 1GiB vs 64MiB (allocation flat in size)", base: "BenchmarkUpload/size=64MiB/side=stream", test: "BenchmarkUpload/size=1GiB/side=stream", unit: "B/MiB", op: "<=", goal: 1.0},
	)
	for _, size := range []string{"256MiB", "1GiB"} {
		c := "BenchmarkCheckpointOverhead/size=" + size + "/side="
		cs = append(cs,
			check{title: "Persist every 1s vs never, " + size + ": throughput", base: c + "never", test: c + "1s", unit: "sec/op", throughput: true, op: ">=", goal: 0.90},
			check{title: "Persist every 1s, " + size + ": % of the time inside Persist", test: c + "1s", unit: "%-in-persist", op: "<=", goal: 10},
			check{title: "Persist every 100ms vs never, " + size + ": throughput", base: c + "never", test: c + "100ms", unit: "sec/op", throughput: true},
			check{title: "Persist every 100ms, " + size + ": % of the time inside Persist", test: c + "100ms", unit: "%-in-persist"},
		)
	}
	const mem = "BenchmarkPeakMemory/size="
	cs = append(cs,
		check{title: "Peak live heap, 2GiB vs 256MiB (flat)", base: mem + "256MiB", test: mem + "2GiB", unit: "live-heap-MiB", op: "<=", goal: 1.10},
		check{title: "Peak heap, 2GiB vs 256MiB (flat)", base: mem + "256MiB", test: mem + "2GiB", unit: "heap-MiB", op: "<=", goal: 1.10},
		check{title: "Peak RSS, 2GiB vs 256MiB (flat)", base: mem + "256MiB", test: mem + "2GiB", unit: "RSS-MiB", op: "<=", goal: 1.10},
		check{title: "Stream's peak live heap, 256MiB: within 8MiB x 5 + 8MiB", test: mem + "256MiB", unit: "stream-live-MiB", op: "<=", goal: 48},
		check{title: "Stream's peak live heap, 2GiB: within 8MiB x 5 + 8MiB", test: mem + "2GiB", unit: "stream-live-MiB", op: "<=", goal: 48},
		check{title: "Stream's peak heap with garbage, 256MiB", test: mem + "256MiB", unit: "stream-heap-MiB"},
		check{title: "Stream's peak heap with garbage, 2GiB", test: mem + "2GiB", unit: "stream-heap-MiB"},
		check{title: "Token bytes, 10,000 vs 10 parts (constant)", base: "BenchmarkPersist/parts=10", test: "BenchmarkPersist/parts=10000", unit: "token-B", op: "<=", goal: 1.0},
		check{title: "Token bytes at 10,000 parts (under 1 KiB)", test: "BenchmarkPersist/parts=10000", unit: "token-B", op: "<=", goal: 1024},
		check{title: "Persist latency, 1,000 vs 10 parts", base: "BenchmarkPersist/parts=10", test: "BenchmarkPersist/parts=1000", unit: "sec/op"},
		check{title: "Persist latency, 10,000 vs 10 parts", base: "BenchmarkPersist/parts=10", test: "BenchmarkPersist/parts=10000", unit: "sec/op"},
	)
	for _, tail := range []string{"0", "1MiB", "8MiB-1"} {
		cs = append(cs, check{title: "Recover, tail " + tail + ": GetObject calls per recover (at most one)", test: "BenchmarkRecover/tail=" + tail, unit: "GetObject/op", op: "<=", goal: 1})
	}
	cs = append(cs,
		check{title: "Recover latency, tail 1MiB vs 0", base: "BenchmarkRecover/tail=0", test: "BenchmarkRecover/tail=1MiB", unit: "sec/op"},
		check{title: "Recover latency, tail 8MiB-1 vs 0", base: "BenchmarkRecover/tail=0", test: "BenchmarkRecover/tail=8MiB-1", unit: "sec/op"},
	)
	for _, records := range []string{"100000", "1000000"} {
		p := "BenchmarkPipeline/records=" + records + "/side="
		cs = append(cs, check{title: "sink.Write vs textio.Write (s3://), " + records + " records: records/s", base: p + "textio", test: p + "sink", unit: "sec/op", throughput: true, op: ">=", goal: 1.0})
	}
	for _, records := range []string{"100000", "1000000"} {
		f := "BenchmarkPipelineFloor/records=" + records
		// The goal is at 1e6 records; at 1e5 the runs are mostly the
		// sink's fixed cost (preflight, marker, barrier, commits).
		var op string
		if records == "1000000" {
			op = ">="
		}
		cs = append(cs,
			check{title: "sink.Write vs the floor in turns, " + records + " records: records/s", test: f, unit: "sink/floor", inRun: true, op: op, goal: 0.4},
			check{title: "sink.Write vs the naive shuffle in turns, " + records + " records: records/s", test: f, unit: "sink/shuffle", inRun: true},
			check{title: "sink.Write with gzip vs the floor in turns, " + records + " records: records/s", test: f, unit: "sink-gzip/floor", inRun: true},
			check{title: "sink.Write with gzip vs the naive shuffle in turns, " + records + " records: records/s", test: f, unit: "sink-gzip/shuffle", inRun: true},
			check{title: "The naive shuffle vs the floor in turns, " + records + " records: records/s", test: f, unit: "shuffle/floor", inRun: true},
			check{title: "The packed shuffle vs the floor in turns, " + records + " records: records/s", test: f, unit: "packed/floor", inRun: true},
			check{title: "The packed shuffle and a splittable DoFn vs the floor in turns, " + records + " records: records/s", test: f, unit: "packed-sdf/floor", inRun: true},
			check{title: "sink.Write vs the packed shuffle and a splittable DoFn in turns, " + records + " records: records/s", test: f, unit: "sink/packed-sdf", inRun: true},
		)
	}
	cs = append(cs,
		check{title: "Partition check, 10^4 files over 100 partitions (information)", test: "BenchmarkPartitionCheck/files=10000", unit: "sec/op"},
		check{title: "Partition check, 10^6 files over 100 partitions (information)", test: "BenchmarkPartitionCheck/files=1000000", unit: "sec/op"},
		check{title: "Partition check, 10^4 files: CPU time (information)", test: "BenchmarkPartitionCheck/files=10000", unit: "cpu-sec/op"},
		check{title: "Partition check, 10^6 files: CPU time (information)", test: "BenchmarkPartitionCheck/files=1000000", unit: "cpu-sec/op"},
		check{title: "Partition check, 10^6 vs 10^4 files: time", base: "BenchmarkPartitionCheck/files=10000", test: "BenchmarkPartitionCheck/files=1000000", unit: "sec/op"},
	)
	cs = append(cs,
		check{title: "Iceberg table commit vs writing its 64 MiB window, 1,000 earlier snapshots: time ratio", test: "BenchmarkTableCommit", unit: "commit/write", op: "<=", goal: 0.05},
		check{title: "Iceberg table commit, 1,000 earlier snapshots: ms (information)", test: "BenchmarkTableCommit", unit: "commit-ms"},
	)
	for _, records := range []string{"100000", "1000000"} {
		p := "BenchmarkParquetPipeline/records=" + records + "/side="
		cs = append(cs, check{title: "Parquet: sink.Write vs parquetio.Write (s3://), " + records + " records: records/s", base: p + "parquetio", test: p + "sink", unit: "sec/op", throughput: true, op: ">=", goal: 1.0})
	}
	return cs
}
