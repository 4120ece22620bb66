#!/usr/bin/env bash
# ttfr-check.sh — how close oipkit's time to first response and inter-response gap come to
# the server's own figures, and the floor under the difference on this machine.
#
# The reference server runs the tokens fixture at a known interval (INTERVAL, default 5ms,
# TOKENS responses per request); `oipkit load --streaming --metrics-url` reads the server's
# nv_inference_first_response_histogram_ms and oip_inference_inter_response_histogram_ms
# and prints their means beside the client's, at each concurrency in CONCURRENCY. The server
# times a request from the moment its handler has it to the moment the response is written;
# the client's time to first response also holds the request's trip to the server and the
# response's trip back, which no server metric sees. bench/rtt measures that trip's floor
# after the same idle gap: a 64-byte TCP round trip between two processes, and a
# ModelStreamInfer round trip between two bare grpc-go processes whose server answers at once.
# Prints Markdown on stdout; OUT keeps the results.
#   INTERVAL=5ms TOKENS=16 CONCURRENCY="1 2 4" DURATION=8s scripts/ttfr-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
INTERVAL=${INTERVAL:-5ms}
TOKENS=${TOKENS:-16}
CONCURRENCY=${CONCURRENCY:-1 2 4}
DURATION=${DURATION:-8s}
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:18740}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:18741}
ECHO_TCP=${ECHO_TCP:-127.0.0.1:18742}
ECHO_GRPC=${ECHO_GRPC:-127.0.0.1:18743}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
command -v jq >/dev/null || { echo "ttfr-check: needs jq (apt-get install jq)" >&2; exit 1; }
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/rtt ./bench/rtt

pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" --token-interval "$INTERVAL" --log-level warn >"$OUT/serve.log" 2>&1 &
pids+=($!)
bin/rtt -listen-tcp "$ECHO_TCP" -listen-grpc "$ECHO_GRPC" >"$OUT/rtt-echo.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
printf '{"data":[{"INPUT0":[%d]}]}\n' "$TOKENS" >"$OUT/tokens.json"

ms() { jq -r "$1 / 1e6 | . * 1000 | round / 1000" "$2"; }
echo "# Time to first response and inter-response gap: oipkit load against the server's own metrics"
echo
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the runs. \`oipkit serve --token-interval $INTERVAL\`; \`oipkit load --grpc $GRPC_ADDR --model tokens --streaming --input-data tokens.json\` ($TOKENS tokens) \`--concurrency C --duration $DURATION --warmup 1s --metrics-url $HTTP_ADDR\`. Means in ms."
echo
echo "| C | first response: server | client | client − server | gap: server | client | client − server |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for c in $CONCURRENCY; do
  rc=0
  bin/oipkit load --grpc "$GRPC_ADDR" --model tokens --streaming --input-data "$OUT/tokens.json" \
    --concurrency "$c" --duration "$DURATION" --warmup 1s --metrics-url "$HTTP_ADDR" \
    --progress never --output "$OUT/c$c.json" >"$OUT/c$c.txt" 2>&1 || rc=$?
  ((rc == 0 || rc == 4)) || { cat "$OUT/c$c.txt" >&2; exit "$rc"; }
  f=$OUT/c$c.json
  sf=$(ms '.server.stream.firstResponse.totalNs / .server.stream.firstResponse.count' "$f")
  cf=$(ms '.latency.firstResponse.meanNs' "$f")
  sg=$(ms '.server.stream.interResponse.totalNs / .server.stream.interResponse.count' "$f")
  cg=$(ms '.latency.interResponse.meanNs' "$f")
  printf '| %s | %s | %s | %+.3f | %s | %s | %+.3f |\n' "$c" "$sf" "$cf" "$(awk -v a="$cf" -v b="$sf" "BEGIN{print a-b}")" "$sg" "$cg" "$(awk -v a="$cg" -v b="$sg" "BEGIN{print a-b}")"
done
echo
echo "The floor under the client − server difference, measured right after (bench/rtt):"
echo
echo '```'
bin/rtt -tcp "$ECHO_TCP" -gap "$INTERVAL" -n 1000
bin/rtt -grpc "$ECHO_GRPC" -gap "$INTERVAL" -n 1000
echo '```'
