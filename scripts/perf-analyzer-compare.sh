#!/usr/bin/env bash
# perf-analyzer-compare.sh — Triton's perf_analyzer and oipkit load against the
# reference server, same model (add_sub), same concurrency, same transport, one
# after the other. perf_analyzer 2.60.0 needs glibc 2.38, so it runs in the
# Debian trixie chroot made by interop/setup-perf-analyzer.sh (root,
# Debian mirror). Writes reports/perf-analyzer.md and prints it.
#
#   scripts/perf-analyzer-compare.sh            (env: CONCURRENCY 4, HTTP_PORT 18720, GRPC_PORT 18721)
set -euo pipefail
cd "$(dirname "$0")/.."
CONCURRENCY=${CONCURRENCY:-4}
HTTP_PORT=${HTTP_PORT:-18720}
GRPC_PORT=${GRPC_PORT:-18721}
OUT=${OUT:-reports/perf-analyzer.md}
WINDOW_MS=5000 # perf_analyzer's measurement window; it needs 3 stable windows

interop/setup-perf-analyzer.sh >/dev/null
command -v jq >/dev/null || scripts/apt-install.sh jq
go build -o bin/oipkit ./cmd/oipkit
bin/oipkit serve --http "127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" --log-level error &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$HTTP_PORT/v2/health/ready" >/dev/null 2>&1 && break; sleep 0.1; done

rows=()
pa() { # protocol-flag port label
  local out
  out=$(interop/perf_analyzer.sh -m add_sub -u "127.0.0.1:$2" -i "$1" --shape INPUT0:1,16 --shape INPUT1:1,16 \
    --concurrency-range "$CONCURRENCY" --measurement-interval "$WINDOW_MS" 2>&1)
  local rps p50 p99
  rps=$(awk '/Throughput:/ {print $2; exit}' <<<"$out")
  p50=$(awk '/p50 latency:/ {printf "%.3f", $3/1000; exit}' <<<"$out")
  p99=$(awk '/p99 latency:/ {printf "%.3f", $3/1000; exit}' <<<"$out")
  rows+=("| perf_analyzer 2.60.0 | $3 | $rps | $p50 | $p99 |")
}
ol() { # target-flags protocol label
  local json
  json=$(bin/oipkit load $1 --model add_sub --protocol "$2" --concurrency "$CONCURRENCY" --duration 15s --warmup 2s \
    --progress never --format json)
  rows+=("| oipkit load | $3 | $(jq -r '.rates.completed | floor' <<<"$json") | $(jq -r '.latency.service.p50Ns / 1e6 * 1000 | floor / 1000' <<<"$json") | $(jq -r '.latency.service.p99Ns / 1e6 * 1000 | floor / 1000' <<<"$json") |")
}
pa grpc "$GRPC_PORT" "gRPC raw"
ol "--grpc 127.0.0.1:$GRPC_PORT" grpc-raw "gRPC raw"
pa http "$HTTP_PORT" "REST binary"
ol "--http http://127.0.0.1:$HTTP_PORT" http-binary "REST binary"

{
  echo "# perf_analyzer and oipkit load against the reference server"
  echo
  echo "Written by \`scripts/perf-analyzer-compare.sh\` on $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, loopback."
  echo "Model add_sub (INPUT0/INPUT1 INT32 [1,16]), closed loop, concurrency $CONCURRENCY. perf_analyzer: three stable"
  echo "${WINDOW_MS} ms windows (its default method), synchronous calls, binary tensors over HTTP (its default) and raw"
  echo "contents over gRPC; oipkit load: 15 s after a 2 s warm-up, the same encodings. Latency is the service time (ms)."
  echo
  echo "| client | protocol | throughput (req/s) | p50 (ms) | p99 (ms) |"
  echo "|---|---|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} > "$OUT"
cat "$OUT"
