#!/usr/bin/env bash
# The main job: start the reference server, make real calls to it over REST and
# gRPC, run the conformance suite against it and a short load run.
set -euo pipefail
cd "$(dirname "$0")/.."
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8000}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:8001}
OUT=${OUT:-out/demo}
mkdir -p "$OUT"

bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" >"$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done

step() { printf '\n== %s\n' "$*"; }
step "server metadata: GET /v2"
curl -sS "http://$HTTP_ADDR/v2"; echo
step "model metadata: GET /v2/models/add_sub"
curl -sS "http://$HTTP_ADDR/v2/models/add_sub"; echo
step "inference: POST /v2/models/add_sub/infer"
curl -sS -H 'Content-Type: application/json' "http://$HTTP_ADDR/v2/models/add_sub/infer" -d '{
  "id": "demo-1",
  "inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}
  ]}'; echo
step "an invalid request gets a 4xx with an error body"
curl -sS -w ' (HTTP %{http_code})' "http://$HTTP_ADDR/v2/models/add_sub/infer" -d '{"inputs": ['; echo

step "conformance suite over REST and gRPC (reports in $OUT/conformance)"
bin/oipkit conform --http "http://$HTTP_ADDR" --grpc "$GRPC_ADDR" --report-dir "$OUT/conformance" || status=$?

step "load: add_sub over gRPC raw, concurrency 4, 5 s"
bin/oipkit load --grpc "$GRPC_ADDR" --model add_sub --protocol grpc-raw --concurrency 4 --duration 5s --output "$OUT/load.json" || true

exit "${status:-0}"
