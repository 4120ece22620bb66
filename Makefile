# oipkit — one Makefile for building, testing and generating.
# `make test` is the test command (.ci/run calls it); `make demo` is the main job.

GO          ?= go
BIN         := bin
TOOLS       := $(CURDIR)/.tools/bin
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCURL_VERSION            := v1.9.3
GINKGO_VERSION             := v2.34.0
FUZZTIME    ?= 5s

export PATH := $(TOOLS):$(PATH)

.PHONY: all build test unit fuzz race vet proto tools demo distributed-demo ttfr-check serve conform verify bench bench-compare perf-analyzer-compare interop grpcurl image image-check clean chromium vendor-js load-reports conformance-pages soak soak-ci

all: build

build:
	$(GO) build -o $(BIN)/oipkit ./cmd/oipkit

# tools installs pinned Go tools into .tools/bin and protoc from Debian when missing.
tools: $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
# grpcurl installs grpcurl for the README's gRPC examples.
grpcurl: $(TOOLS)/grpcurl
$(TOOLS)/grpcurl:
	GOBIN=$(TOOLS) $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)
$(TOOLS)/ginkgo:
	GOBIN=$(TOOLS) $(GO) install github.com/onsi/ginkgo/v2/ginkgo@$(GINKGO_VERSION)

# proto regenerates specs/inferencepb from specs/proto/inference.proto.
proto: tools
	@command -v protoc >/dev/null || scripts/install-protoc.sh
	protoc -I specs/proto \
		--go_out=specs/inferencepb --go_opt=paths=source_relative \
		--go-grpc_out=specs/inferencepb --go-grpc_opt=paths=source_relative \
		specs/proto/inference.proto

# The deploy module (deploy/go.mod: the container image and the Kubernetes manifests) is a
# module of its own, so that importers of oipkit do not inherit go-containerregistry and
# Kubernetes; vet and unit cover it too.
vet:
	$(GO) vet ./...
	$(GO) vet -C deploy ./...

# unit runs every test; the HTML pages are checked in headless chromium (installed by the
# chromium target) and their screenshots kept in bin/screenshots. selftest runs the suite against
# some 170 broken servers one after another: past go test's default 10-minute limit on 2 cores.
unit: chromium
	OIPKIT_REQUIRE_BROWSER=1 OIPKIT_SCREENSHOT_DIR=$(CURDIR)/$(BIN)/screenshots $(GO) test -count=1 -timeout 40m ./...
	$(GO) test -C deploy -count=1 ./...

# chromium installs Debian's chromium (scripts/apt-install.sh) for the HTML page checks.
chromium:
	@command -v chromium >/dev/null || scripts/install-chromium.sh

# vendor-js re-vendors uPlot (pinned version and checksum) from npm into htmlpage/assets/uplot.
vendor-js:
	scripts/vendor-uplot.sh

# load-reports regenerates the example load reports in reports/load/ (a concurrency sweep of the
# reference server, the committed runtime results overlaid) and their chromium screenshots.
load-reports: build chromium
	scripts/load-reports.sh

# conformance-pages renders the committed conformance pages (each runtime's report.html,
# reports/compatibility.{md,html}) from the committed reports, and their chromium screenshots.
conformance-pages: chromium
	scripts/conformance-pages.sh

race:
	$(GO) test -count=1 -race ./tensor/... ./oip/... ./client/... ./reference/... ./loadgen/... ./conformance/...

# fuzz runs each fuzz target briefly; `make fuzz FUZZTIME=1m` for longer.
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

test: vet verify unit race fuzz image-check

demo: build
	scripts/demo.sh

# distributed-demo runs one open-loop test as N=4 segment processes on loopback against the
# reference server, merges them with oipkit report and compares with a single-process run.
distributed-demo: build
	scripts/distributed-demo.sh

# ttfr-check compares oipkit load's time to first response and inter-response gap with the
# reference server's own metrics (tokens fixture) and prints the loopback round trip under the
# difference (bench/rtt: bare TCP and bare grpc-go). Markdown on stdout.
ttfr-check: build
	scripts/ttfr-check.sh

# verify fails when the conformance coverage table is stale, a blocking
# requirement has neither a spec nor a waiver, or a spec names an unknown ID.
verify:
	scripts/verify.sh

# interop runs the reference server, standalone Triton, PyTriton, MLServer, KServe and TorchServe
# one at a time, each from its pinned venv in .venv-interop/ (installed on first use): oipkit
# conform, NVIDIA's tritonclient and a short oipkit load run against each, then writes
# reports/runtimes/*/, reports/compatibility.md and reports/performance.md. See interop/README.md.
# INTEROP_ALLOW_SETUP_FAILURE=1 skips a runtime whose venv cannot be installed.
interop: build
	interop/all.sh

# perf-analyzer-compare runs Triton's perf_analyzer (in a Debian trixie chroot:
# it needs glibc 2.38) and oipkit load side by side against the reference server.
perf-analyzer-compare: build
	scripts/perf-analyzer-compare.sh

# bench-compare prints every performance target as a ratio against an anchor
# measured in the same run (wrk, ghz, perf_analyzer, the bare net/http and
# grpc-go servers of bench/bare, encoding/json) and writes
# reports/bench-compare.md; it installs ghz, wrk, jq and GNU time when missing.
# Five rounds of 6 s runs by default (ROUNDS, DURATION); each row keeps its
# median round. PERF_ANALYZER=0 skips that tool. Then the large-tensor rows
# (scripts/bench-large.sh: 1 MiB, 16 MiB FP32 and BYTES beside the TCP and
# grpc-go echoes of bench/echo, the generator alone, Triton where installed);
# LARGE=0 skips them. Then streaming (scripts/bench-stream.sh: tokens beside
# bench/stream's bare grpc-go stream; STREAM=0 skips) and memory
# (scripts/bench-memory.sh: generator RSS at 1,000 and 10,000 in flight
# beside wrk and ghz, the reference with 10,000 idle connections beside bare
# net/http; MEMORY=0 skips, MEMORY_ROUNDS rounds, default 3).
bench-compare: build
	scripts/bench-compare.sh

# image writes the container image (static oipkit on an empty base, non-root,
# linux/amd64 and linux/arm64) as an OCI archive, without a container daemon.
# Reproducible: timestamps are the last commit's time. Load it with
# `podman load -i`, `docker load -i`, or push it with `skopeo copy --all
# oci-archive:$(IMAGE_ARCHIVE) docker://REGISTRY/oipkit:TAG`. See deploy/README.md.
IMAGE_ARCHIVE   ?= $(BIN)/oipkit-image.oci.tar
IMAGE_NAME      ?= oipkit
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
image:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run -C deploy ./image -src $(CURDIR) -o $(abspath $(IMAGE_ARCHIVE)) \
		-name $(IMAGE_NAME) -platforms $(IMAGE_PLATFORMS) -revision "$(IMAGE_REVISION)" \
		-digest-file $(abspath $(IMAGE_ARCHIVE)).digest

# image-check builds the image twice and fails unless both builds give the same
# digest and the same archive bytes; skopeo inspects it when installed.
image-check:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) IMAGE_REVISION="$(IMAGE_REVISION)" \
		IMAGE_PLATFORMS=$(IMAGE_PLATFORMS) GO=$(GO) scripts/image-check.sh

# soak runs the reference server under mixed load (every transport, streams, sequences,
# generate, repository churn, shared memory, a reconnecting client) for SOAK_DURATION and
# fails when its RSS, Go heap, goroutines or open files grow beyond cmd/soak's bounds; it
# writes reports/soak/ (soak.md, soak.json, samples.csv, soak.html and its screenshot).
# soak-ci is the 2-minute run of .ci/run, writing bin/soak/.
SOAK_DURATION ?= 30m
soak: build chromium
	$(GO) build -o $(BIN)/soak ./cmd/soak
	$(BIN)/soak -duration $(SOAK_DURATION) -oipkit $(BIN)/oipkit -out reports/soak

soak-ci: build
	$(GO) build -o $(BIN)/soak ./cmd/soak
	$(BIN)/soak -duration 2m -oipkit $(BIN)/oipkit -out $(BIN)/soak-ci

serve: build
	$(BIN)/oipkit serve

# bench runs the Go benchmarks: codecs, the reference server, the client and
# the load generator's hot path.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./tensor/ ./oip/ ./reference/ ./client/ ./loadgen/ ./loadgen/oiptarget/

clean:
	rm -rf $(BIN)
