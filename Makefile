# mcpsandbox: `make demo` and `make test` do all the set-up on a fresh
# machine (Docker engine, host packages, runtime images).
GO      ?= go
BIN     := bin/mcpsandbox
FIXTURE := bin/fixtureserver
export PATH := $(PATH):/usr/local/go/bin

.PHONY: all build setup images test test-short lint bench demo clean corpus

all: build

# One static binary: the runner, and the agent it puts in every sandbox.
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN) ./cmd/mcpsandbox
	CGO_ENABLED=0 $(GO) build -o $(FIXTURE) ./sandbox/internal/fixtureserver

# The Docker engine and the host files the images are built from.
setup:
	bash ci/docker-up.sh
	bash ci/host-deps.sh

# Runtime images from the host's files; a no-op when nothing changed.
images: setup build
	$(BIN) images build base node $(if $(wildcard /usr/bin/python3),python) $(if $(wildcard /usr/bin/strace),strace)

# Packages whose tests need no engine, also run under the race detector.
RACE_PKGS := ./ci/... ./overlay/... ./probes/... ./sandbox/agent/... ./sandbox/label/...

# Unit and integration tests against the real engine and real servers.
# TEST_TIMEOUT bounds each package's test binary. The longest packages,
# cmd/mcpsandbox and sandbox, take 6.5 and 5.5 min on an idle 2-core
# machine and up to 17 and 14 min while two other `make test` runs share
# the engine (load 10-27; docs/development.md has the table): 45 min
# leaves more than twice that, and still ends a hung test well inside
# CI's 90 min.
TEST_TIMEOUT ?= 45m
test: images
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	cd ci/bulk/k8sjob/k8stest && $(GO) test -count=1 ./...
	CGO_ENABLED=1 $(GO) test -race -count=1 $(RACE_PKGS)

# Tests that need no Docker; integration tests say they skip.
test-short:
	$(GO) test -short -count=1 ./...
	cd ci/bulk/k8sjob/k8stest && $(GO) test -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if $(GO) install honnef.co/go/tools/cmd/staticcheck@latest 2>/dev/null; then \
		$$($(GO) env GOPATH)/bin/staticcheck ./...; \
	else echo "staticcheck did not install; skipped"; fi

bench: images
	$(GO) test -run '^$$' -bench Attribution -benchtime 300ms -count 1 ./overlay/
	$(GO) test -run '^$$' -bench Journal -benchtime 20x -count 1 ./overlay/
	$(GO) test -run '^$$' -bench 'ScanWorkspace' -benchtime 2x -count 1 -timeout 30m ./sandbox/
	$(GO) test -run '^$$' -bench 'RunnerPeakMemory' -benchtime 1x -count 1 -timeout 30m ./sandbox/
	$(GO) test -run '^$$' -bench Overhead -benchtime 3x -count 1 -timeout 60m ./sandbox/agent/
	$(GO) run ./cmd/bulkbench -mcpsandbox $(BIN) $(if $(BENCH_CACHE),-cache $(BENCH_CACHE))
	$(GO) test -run '^$$' -bench RunProxyLatency -benchtime 3x -count 1 -timeout 30m ./sandbox/proxy/
	$(GO) test -run '^$$' -bench DemoScan -benchtime 3x -count 1 -timeout 30m ./cmd/mcpsandbox/
	$(GO) test -run '^$$' -bench HostChecker -benchtime 3x -count 1 -timeout 30m ./cmd/mcpsandbox/

# The main job on a bundled example: scan the fixture server, whose tools
# lie about their side effects, in sinkhole mode (nothing leaves; HTTP and
# DNS are answered on the loopback), and print its report. Exit 1
# (findings) is the expected outcome here.
demo: images
	$(BIN) scan --format text --network sinkhole \
		--workspace probes/examples/demo/workspace \
		--probes probes/examples/demo/probes.json \
		--mount $(FIXTURE):/opt/fixture/server \
		-- /opt/fixture/server honest liar; \
	code=$$?; [ $$code -le 1 ] || exit $$code

clean:
	-[ -x $(BIN) ] && $(BIN) clean --images
	rm -rf bin

# Real servers from npm (ci/corpus/servers.txt), fetched and scanned by
# `mcpsandbox bulk` (cache ~/.cache/mcpsandbox/corpus), no probe files:
# prints a table; bulk's results (each JSON report in reports/) stay in
# corpus-results/. Not part of `make test` (it needs the npm registry and
# takes minutes).
corpus: images
	$(GO) run ./cmd/corpus -servers ci/corpus/servers.txt -mcpsandbox $(BIN) -results corpus-results $(if $(J),-j $(J))
