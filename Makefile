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

.PHONY: test tools vet run bench bench-stream bench-quick bench-scale fuzz soak explore clean test-aws

tools: $(VERSITYGW) $(TOXIPROXY) $(MINIO)

$(VERSITYGW):
	GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(MINIO):
	GOBIN=$(BIN) $(GO) install github.com/minio/minio@$(MINIO_VERSION)

$(TOXIPROXY):
	GOBIN=$(BIN) $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(BIN)/server $(TOXIPROXY)

$(BENCHSTAT):
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

vet:
	$(GO) mod download
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1)
	$(GO) vet ./...

# The sink's tests of bundle finalization on the embedded runner run a second
# time without the race detector: race-enabled builds never ask for bundle
# finalization (Beam Go's FinalizeBundle handler races; see
# sink/finalize_race.go), so those tests skip themselves under -race.
test: tools vet
	$(GO) test -race -timeout 30m ./...
	$(GO) test -count=1 -timeout 10m -run 'TestFinalizeAlwaysOnPrism|TestBeamFinalizationFaults' ./sink/

# Fuzz targets, each run for FUZZTIME (go test fuzzes one target per run).
# `make test` already runs their seed corpora as ordinary tests.
FUZZTIME ?= 30s
CODER_FUZZ := FuzzDecodeResume FuzzDecodeCommit FuzzUnframe
SINK_FUZZ := FuzzDecodeRestriction FuzzDecodeBatch FuzzDecodeSettings FuzzUnpack FuzzBoundFooterStats
OWNKEYS_FUZZ := FuzzKeys

fuzz:
	set -e; for f in $(CODER_FUZZ); do \
		$(GO) test -run='^$$' -fuzz='^'"$$f"'$$' -fuzztime=$(FUZZTIME) ./coder/; \
	done; for f in $(SINK_FUZZ); do \
		$(GO) test -run='^$$' -fuzz='^'"$$f"'$$' -fuzztime=$(FUZZTIME) ./sink/; \
	done; for f in $(OWNKEYS_FUZZ); do \
		$(GO) test -run='^$$' -fuzz='^'"$$f"'$$' -fuzztime=$(FUZZTIME) ./internal/ownkeys/; \
	done

# Benchmarks side by side with the peers (see BENCHMARKS.md): every side of a
# comparison runs as its own process, once per round, the rounds interleaved,
# and benchstat compares them. Raw results and the report go to bench-out/.
# `make bench` takes about 20 minutes on 2 quiet cores (14 as measured
# with three sides in turns; the uploader as a fourth adds about 50 s a
# round; the runs in turns and the pipeline and Parquet sides at 1e6
# records are most of it; far longer with other work running);
# `make bench-quick` is a smoke run of a few minutes (fewer rounds, smaller
# sizes).
BENCH_OUT := bench-out

bench: $(VERSITYGW) $(BENCHSTAT)
	mkdir -p $(BENCH_OUT)
	$(GO) test -c -o $(BENCH_OUT)/bench.test ./bench
	$(GO) run ./bench/cmd/benchrounds -plan full -bin $(BENCH_OUT)/bench.test -dir bench \
		-out $(BENCH_OUT) -benchstat $(BENCHSTAT)

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
	$(GO) run ./bench/cmd/benchrounds -plan quick -bin $(BENCH_OUT)/bench.test -dir bench \
		-out $(BENCH_OUT)/quick -benchstat $(BENCHSTAT)

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

# Start a local S3 server (data in .s3data/), run the batch example through
# sink.Write on the embedded runner, print the summary, stop the server.
# FORMAT=parquet writes Parquet files instead of gzip JSON Lines (under
# corpus-parquet/) and reads them back.
FORMAT ?= jsonl
run: $(VERSITYGW)
	$(GO) run ./cmd/s3once-run -format $(FORMAT)

# The integration crash loops, 100 times over (make test runs 5).
SOAK_LOOPS ?= 100
soak: tools
	S3ONCE_CRASH_LOOPS=$(SOAK_LOOPS) $(GO) test -race -timeout 4h -run 'TestPipelineCrashLoop|TestTokenRecoveryAcrossProcessDeath' -v ./integration/

# The explorer's wide bounds (internal/explore): two faults per schedule on
# one file and on the two-file workload, release orders within a preemption
# bound of 2; each test prints how many schedules it explored within which
# bounds. In-memory S3 and fake time: no server, no tools. make test runs
# the quick bounds. About 6 minutes on 2 cores (internal/explore).
explore:
	S3ONCE_EXPLORE=wide $(GO) test -count=1 -timeout 4h -run '^TestExplore' -v ./internal/explore/

clean:
	rm -rf $(BIN) .s3data bench-out

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
