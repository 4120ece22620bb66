#!/usr/bin/env bash
# Regenerates the example load reports committed in reports/load/:
#   reference-sweep.{json,html,txt,png}  oipkit load --concurrency-range 1:32:x2 against the
#                                        reference server (the page and its chromium screenshot)
#   reference-stream.{json,html,txt,png} oipkit load --streaming of the tokens fixture (16 tokens
#                                        5 ms apart) with --metrics-url: time to first response and
#                                        inter-response gaps, the server's beside the client's
#   runtimes.{html,png}                  oipkit report --html of reports/runtimes/*/load-*.json
# Every page is opened in headless chromium (cmd/pagecheck): no console error, no network
# fetch, every chart drawn.
set -euo pipefail
cd "$(dirname "$0")/.."
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:18600}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:18601}
OUT=${OUT:-reports/load}
DURATION=${DURATION:-5s}
mkdir -p "$OUT" bin
go build -o bin/pagecheck ./cmd/pagecheck

bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" --token-interval 5ms --log-level warn >"$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -f "$OUT/serve.log"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done

bin/oipkit load --grpc "$GRPC_ADDR" --model add_sub --concurrency-range 1:32:x2 --duration "$DURATION" --warmup 1s \
  --html "$OUT/reference-sweep.html" --output "$OUT/reference-sweep.json" --progress never | tee "$OUT/reference-sweep.txt"
echo '{"data":[{"INPUT0":[16]}]}' >"$OUT/tokens.json"
bin/oipkit load --grpc "$GRPC_ADDR" --model tokens --streaming --input-data "$OUT/tokens.json" --concurrency 4 \
  --duration "$DURATION" --warmup 1s --metrics-url "$HTTP_ADDR" \
  --html "$OUT/reference-stream.html" --output "$OUT/reference-stream.json" --progress never | tee "$OUT/reference-stream.txt"
rm -f "$OUT/tokens.json"
bin/oipkit report --html "$OUT/runtimes.html" reports/runtimes/*/load-*.json >/dev/null

bin/pagecheck -screenshot "$OUT" -min-charts 4 "$OUT/reference-sweep.html"
bin/pagecheck -screenshot "$OUT" -min-charts 4 "$OUT/reference-stream.html"
bin/pagecheck -screenshot "$OUT" -height 1900 -min-charts 10 "$OUT/runtimes.html"
