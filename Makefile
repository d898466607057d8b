# s3once: make test | make run | make bench | make fuzz | make soak
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/.bin
VERSITYGW_VERSION := v1.8.0
TOXIPROXY_VERSION := v2.12.0
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
# MinIO is a second, independent S3 server for the tests (AGPL-3.0): a test
# tool built into .bin, never a Go dependency of s3once (`go install
# pkg@version` leaves go.mod alone).
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
VERSITYGW := $(BIN)/versitygw
MINIO := $(BIN)/minio
TOXIPROXY := $(BIN)/toxiproxy-server
BENCHSTAT := $(BIN)/benchstat
export S3ONCE_BIN := $(BIN)

.PHONY: test tools vet run server bench bench-stream bench-quick bench-scale fuzz soak explore clean test-aws

# The independent readers (icebergtable TestIndependentReader,
# TestDuckDBReadsDataFiles): icebird and hyparquet, and DuckDB's Node client
# with its platform binary, from the npm registry as package-lock.json pins
# them, for the machine's Node.js. One npm ci installs both; the second
# stamp only reinstalls when its package alone has gone missing.
READERS_DIR := icebergtable/testdata/icebird
ICEBIRD := $(READERS_DIR)/node_modules/icebird/package.json
DUCKDB := $(READERS_DIR)/node_modules/@duckdb/node-api/package.json

tools: $(VERSITYGW) $(TOXIPROXY) $(MINIO) $(ICEBIRD) $(DUCKDB)

$(ICEBIRD): $(READERS_DIR)/package.json $(READERS_DIR)/package-lock.json
	@echo "installing the independent readers of the table tests (icebird, hyparquet, DuckDB's Node client) with npm ci: seconds"
	command -v npm >/dev/null || (apt-get update && apt-get install -y nodejs npm)
	cd $(READERS_DIR) && npm ci --no-audit --no-fund
	touch $@

$(DUCKDB): $(ICEBIRD)
	test -f $@ || (cd $(READERS_DIR) && npm ci --no-audit --no-fund)
	touch $@

# Each install says what it installs and why before it starts, and prints a
# line at least every 30 seconds while it compiles (scripts/gobuild.sh).
GOBUILD := GO=$(GO) scripts/gobuild.sh
$(VERSITYGW):
	@GOBIN=$(BIN) $(GOBUILD) install versitygw "the local S3 server" github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(MINIO):
	@GOBIN=$(BIN) $(GOBUILD) install MinIO "a second S3 server for the tests" github.com/minio/minio@$(MINIO_VERSION)

$(TOXIPROXY):
	@GOBIN=$(BIN) $(GOBUILD) install toxiproxy "network faults for the tests" github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(BIN)/server $(TOXIPROXY)

$(BENCHSTAT):
	@GOBIN=$(BIN) $(GOBUILD) install benchstat "compares benchmark rounds" golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

vet:
	$(GO) mod download
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1)
	$(GO) vet ./...
	$(GO) vet -tags $(MUTANT_TAG) ./...
	$(GO) vet -tags iceberg ./cmd/s3once-run/

# The sink's tests of bundle finalization on the embedded runner run a second
# time without the race detector: race-enabled builds never ask for bundle
# finalization (Beam Go's FinalizeBundle handler races; see
# sink/finalize_race.go), so those tests skip themselves under -race. So do
# the window scenarios: their refused and ended runs fail jobs with bundles
# in flight, which Beam Go's harness reports as a data race; they run
# there, where FinalizeCommit "always" commits at bundle finalization.
#
# The mutation tests put past bugs back through internal/mutant's switches,
# which exist only in builds with the s3once_mutant tag (shipped binaries
# carry none): a second pass builds the packages that hold such tests with
# the tag and runs only those tests. Integration tests build their child
# programs with the tag for a mutant run and switch the bug on through
# S3ONCE_MUTANT.
#
# The operator runner's table stage exists only in builds with the iceberg
# tag (make run FORMAT=iceberg): a pass builds and tests it with the tag.
MUTANT_TAG := s3once_mutant
test: tools vet
	$(GO) test -race -timeout 30m ./...
	$(GO) test -count=1 -timeout 10m -run 'TestFinalizeAlwaysOnPrism|TestBeamFinalizationFaults|TestFinalizeAlwaysChangedRerun|TestFinalizeMode' ./sink/
	$(GO) test -count=1 -timeout 10m -run '^TestWindowScenarios$$|^TestScenarios$$' ./internal/testkit/scenario/
	$(GO) test -race -tags $(MUTANT_TAG) -timeout 10m ./internal/mutant/
	$(GO) test -race -tags iceberg -timeout 10m ./cmd/s3once-run/
	$(GO) test -race -tags $(MUTANT_TAG) -timeout 30m -run '^TestMutant' ./internal/s3call/ ./internal/testkit/explore/ ./internal/testkit/scenario/ ./integration/ ./icebergtable/

# Fuzz targets, each run for FUZZTIME (go test fuzzes one target per run).
# `make test` already runs their seed corpora as ordinary tests.
FUZZTIME ?= 30s
FUZZ := coder:FuzzDecodeResume coder:FuzzDecodeCommit coder:FuzzUnframe \
	sink:FuzzDecodeRestriction sink:FuzzDecodeSettings internal/parquetbody:FuzzBoundFooterStats \
	internal/pack:FuzzUnpack internal/batchwire:FuzzDecode \
	internal/ownkeys:FuzzKeys internal/ownkeys:FuzzPartitionKeys \
	internal/manifest:FuzzDecodeManifest internal/manifest:FuzzEncodeManifest \
	internal/settingsmarker:FuzzDecodeSettingsMarker \
	internal/parquetrow:FuzzDecode

fuzz:
	set -e; for t in $(FUZZ); do \
		$(GO) test -run='^$$' -fuzz='^'"$${t#*:}"'$$' -fuzztime=$(FUZZTIME) ./$${t%%:*}/; \
	done

# Benchmarks side by side with the peers (see BENCHMARKS.md): every side of a
# comparison runs as its own process, once per round, the rounds interleaved,
# and benchstat compares them. Raw results and the report go to bench-out/.
# `make bench` takes about 20 minutes on 2 quiet cores (14 as measured
# with three sides in turns; the uploader as a fourth adds about 50 s a
# round; the runs in turns and the pipeline and Parquet sides at 1e6
# records are most of it; far longer with other work running), plus about
# three and a half minutes a round for the floor group (6 pipelines of each
# of 6 sides at 1e5 and 1e6 records; the naive shuffle at 1e6 is half of
# it) and the table-commit group (1,000 snapshots set up, then 3 windows of
# 64 MiB), and the table's aging, expiry, catalog-latency and peer-shape
# groups (about 5 minutes a round), so about an hour and a half in all;
# `make bench-quick` is a smoke run of a few minutes (fewer rounds, smaller
# sizes).
BENCH_OUT := bench-out

bench: $(VERSITYGW) $(BENCHSTAT)
	mkdir -p $(BENCH_OUT)
	$(GO) test -c -o $(BENCH_OUT)/bench.test ./bench
	$(GO) test -c -o $(BENCH_OUT)/sink.test ./sink
	$(GO) test -c -o $(BENCH_OUT)/icebergtable.test ./icebergtable
	$(GO) run ./bench/cmd/benchrounds -plan full -bin $(BENCH_OUT)/bench.test -dir bench \
		-sinkbin $(BENCH_OUT)/sink.test -sinkdir sink -icebergbin $(BENCH_OUT)/icebergtable.test \
		-icebergdir icebergtable -out $(BENCH_OUT) -benchstat $(BENCHSTAT)

# The stream against its peers and both ceilings, in separate processes
# and in turns within one, and its memory, in 12 rounds: about 33 minutes on 2
# quiet cores (22 to 24 as measured with three sides in turns; the uploader
# as a fourth adds about 50 s a round).
bench-stream: $(VERSITYGW) $(BENCHSTAT)
	mkdir -p $(BENCH_OUT)/stream
	$(GO) test -c -o $(BENCH_OUT)/bench.test ./bench
	$(GO) run ./bench/cmd/benchrounds -plan stream -bin $(BENCH_OUT)/bench.test -dir bench \
		-out $(BENCH_OUT)/stream -benchstat $(BENCHSTAT)

bench-quick: $(VERSITYGW) $(BENCHSTAT)
	mkdir -p $(BENCH_OUT)/quick
	$(GO) test -c -o $(BENCH_OUT)/bench.test ./bench
	$(GO) test -c -o $(BENCH_OUT)/sink.test ./sink
	$(GO) run ./bench/cmd/benchrounds -plan quick -bin $(BENCH_OUT)/bench.test -dir bench \
		-sinkbin $(BENCH_OUT)/sink.test -sinkdir sink -out $(BENCH_OUT)/quick -benchstat $(BENCHSTAT)

# The scale curve: pipeline time and the sink's own live heap at 1e5, 1e6
# and 1e7 records and 1, 4 and 16 shards, and the stream's time per GiB and
# peak heap from 64 MiB to 4 GiB; a table (scale.md) and a plot (scale.svg)
# in bench-out/. SCALE_GRID=small (the default) stops at 1e6 records and
# 1 GiB: 3 rounds, a few minutes on 2 quiet cores (one round took 9 minutes
# under a load average of 14). SCALE_GRID=full is the whole grid, 3 rounds:
# the 1e7-record cells dominate (85 to 120 s each), 20 minutes on 2 quiet
# cores as measured, far longer under load. BENCHMARKS.md has its results,
# and bench/results/ the table and plot it wrote.
SCALE_GRID ?= small
bench-scale: $(VERSITYGW)
	mkdir -p $(BENCH_OUT)
	$(GO) test -c -o $(BENCH_OUT)/bench.test ./bench
	$(GO) run ./bench/cmd/benchrounds -plan scale -grid $(SCALE_GRID) -bin $(BENCH_OUT)/bench.test \
		-dir bench -out $(BENCH_OUT)

# build PKG,OUT,FLAGS builds the main package PKG into OUT: it first says
# how many packages need compiling and which large libraries are among
# them (the first build compiles Apache Beam's Go SDK; FORMAT=iceberg adds
# iceberg-go, Arrow and SQLite), with a rough time, then prints a line at
# least every 30 seconds naming the package still compiling or the link
# (scripts/gobuild.sh). Compiler errors pass as they are.
define build
	@$(GOBUILD) build $(1) $(2) $(3)
endef

# Start a local S3 server (data in .s3data/), run the batch example through
# sink.Write on the embedded runner, print the summary, stop the server.
# FORMAT=parquet writes Parquet files instead of gzip JSON Lines (under
# corpus-parquet/) and reads them back. FORMAT=iceberg builds the runner with
# -tags iceberg (the default build links no Iceberg) and appends the Parquet
# files to the table lake.corpus_by_topic (partitioned by topic; a SQLite
# catalog in .s3data/), printing the snapshot, row and partition counts.
FORMAT ?= jsonl
ICEBERG_TAGS := $(if $(filter iceberg,$(FORMAT)),-tags iceberg)
ICEBERG_SUFFIX := $(if $(filter iceberg,$(FORMAT)),-iceberg)
run: $(VERSITYGW)
	$(call build,./cmd/s3once-run,.build/s3once-run$(ICEBERG_SUFFIX),$(ICEBERG_TAGS))
	.build/s3once-run$(ICEBERG_SUFFIX) -format $(FORMAT)

# Start the local S3 server for a program of your own: on
# http://127.0.0.1:7070, data in .s3data/, with the bucket demo; it prints the
# lines to export and the endpoint, and stops on Ctrl-C.
server: $(VERSITYGW)
	$(call build,./cmd/s3once-run,.build/s3once-run)
	.build/s3once-run -serve

# The integration crash loops, 100 times over (make test runs 5), the
# worker-kill loop on the job server (TestWorkerKillLoop), 20 times over
# (make test runs 3), and the Iceberg table's crash loop (icebergtable
# TestCrashLoop), 20 times over (make test runs 3), its maintenance crash
# loop (TestMaintenanceCrashLoop: compaction, expiry and orphan removal
# killed beside an appender), 100 times over (make test runs 3), and the
# 1,000-small-file compaction figure; and the worker memory
# budget's prism test (bench TestWorkerMemoryBudget), whose heap figures
# vary with the machine's load; and the folder scenarios
# (internal/testkit/scenario), SOAK_SCENARIOS random sequences (make test
# runs the pinned ones), and the window scenarios, SOAK_WINDOW_SCENARIOS
# random sequences (make test runs the pinned ones and 2), without the race
# detector (see the test target); and a new user's first three make runs in a
# clean clone with an empty build cache, failing on any silence over 60
# seconds (scripts/silentgap.sh, 20 to 40 minutes).
SOAK_LOOPS ?= 100
SOAK_WORKER_KILL_LOOPS ?= 20
SOAK_ICEBERG_LOOPS ?= 20
SOAK_MAINTAIN_LOOPS ?= 100
SOAK_CATALOG_FAULT_LOOPS ?= 200
SOAK_SCENARIOS ?= 400
SOAK_WINDOW_SCENARIOS ?= 200
soak: tools
	S3ONCE_CRASH_LOOPS=$(SOAK_LOOPS) S3ONCE_WORKER_KILL_LOOPS=$(SOAK_WORKER_KILL_LOOPS) $(GO) test -race -timeout 4h \
		-run 'TestPipelineCrashLoop|TestTokenRecoveryAcrossProcessDeath|TestWorkerKillLoop' -v ./integration/
	S3ONCE_ICEBERG_CRASH_LOOPS=$(SOAK_ICEBERG_LOOPS) $(GO) test -race -timeout 2h -run '^TestCrashLoop$$' -v ./icebergtable/
	S3ONCE_ICEBERG_MAINTAIN_LOOPS=$(SOAK_MAINTAIN_LOOPS) S3ONCE_ICEBERG_COMPACT_FIGURE=1 $(GO) test -race -timeout 2h \
		-run '^TestMaintenanceCrashLoop$$|^TestCompactThousandFiles$$' -v ./icebergtable/
	S3ONCE_CATALOG_FAULT_LOOPS=$(SOAK_CATALOG_FAULT_LOOPS) $(GO) test -race -timeout 8h -run '^TestFaultMatrix' -v ./icebergtable/
	S3ONCE_WORKER_BUDGET_TEST=1 $(GO) test -race -timeout 30m -run '^TestWorkerMemoryBudget$$' -v ./bench/
	S3ONCE_SCENARIOS=$(SOAK_SCENARIOS) $(GO) test -race -timeout 4h -run '^TestScenarios$$' -v ./internal/testkit/scenario/
	S3ONCE_WINDOW_SCENARIOS=$(SOAK_WINDOW_SCENARIOS) $(GO) test -count=1 -timeout 2h -run '^TestWindowScenarios$$' -v ./internal/testkit/scenario/
	scripts/silentgap.sh

# The explorer's wide bounds (internal/testkit/explore): two faults per schedule on
# one file and on the two-file workload, release orders within a preemption
# bound of 2; each test prints how many schedules it explored within which
# bounds. In-memory S3 and fake time: no server, no tools. make test runs
# the quick bounds. About 6 minutes on 2 cores (internal/testkit/explore). Built
# with the mutant tag, so that the mutants' searches run too.
explore:
	S3ONCE_EXPLORE=wide $(GO) test -count=1 -tags $(MUTANT_TAG) -timeout 4h -run '^(TestExplore|TestMutant)' -v ./internal/testkit/explore/

clean:
	rm -rf $(BIN) .s3data .build bench-out

# The opt-in smoke test against real AWS (it reaches the internet). It runs
# only when the environment names the buckets and the region; otherwise it
# prints SKIPPED and fails, so that a run that did not happen is never taken
# for a pass. Variables: integration/awssmoke's package documentation.
test-aws:
	@missing=""; for v in S3ONCE_AWS_BUCKET S3ONCE_AWS_VERSIONED_BUCKET AWS_REGION; do \
		[ -n "$${!v}" ] || missing="$$missing $$v"; done; \
	if [ -n "$$missing" ]; then \
		echo "SKIPPED: make test-aws did not run: set$$missing (and AWS credentials)"; exit 2; fi
	S3ONCE_AWS_REQUIRED=1 $(GO) test -count=1 -v -timeout 20m -run '^TestAWS$$' ./integration/awssmoke/
