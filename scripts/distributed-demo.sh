#!/usr/bin/env bash
# distributed-demo.sh — `make distributed-demo`: one open-loop test run as N segment processes
# (`oipkit load --segment I/N --start-at T`) on loopback against the reference server, merged
# with `oipkit report`, then the same test in one process; scripts/segmentcheck compares them.
#
# The server runs the delay fixture (DELAY, default 50ms) on INSTANCES execution instances
# (`oipkit serve --instances`, default 5: a capacity of 100 req/s): its response times are then
# set by the queue the test's seeded Poisson schedule builds, not by how the machine's CPU
# schedules the generator processes, and the segments' union is exactly the single-process
# schedule — so both runs should see the same response times, request for request, and the
# same p99 but for timing noise (segmentcheck says whether they agree to the histogram's
# precision). RATE (default 80/s, 80% of the capacity) keeps the CPU idle while the queue
# shapes the tail; a long service time keeps each wake-up's lateness (0.1–0.4 ms on this VM,
# more when it stalls) small beside the response time, though the queue adds up the lateness
# of the requests ahead. INSTANCES=0 runs delay without a limit.
# The single-process run is repeated (RERUN=1, the default) so that segmentcheck can print how
# far the same test in one process lands from itself: the machine's own run-to-run spread of
# the p99, the scale against which the merged p99's difference means something.
#   N=4 RATE=80 DURATION=30s DELAY=50ms INSTANCES=5 RERUN=1 scripts/distributed-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-4}
RATE=${RATE:-80}
DURATION=${DURATION:-30s}
MODEL=${MODEL:-delay}
DELAY=${DELAY:-50ms}
INSTANCES=${INSTANCES:-5}
RERUN=${RERUN:-1}
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8010}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:8011}
OUT=${OUT:-out/distributed-demo}
rm -rf "$OUT"
mkdir -p "$OUT/segments"

serve=(bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" --delay "$DELAY")
((INSTANCES > 0)) && serve+=(--instances "$MODEL=$INSTANCES")
echo "== server: ${serve[*]}"
"${serve[@]}" > "$OUT/serve.log" 2>&1 &
server=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  kill -TERM "$server" 2> /dev/null || true
  wait 2> /dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" > /dev/null 2>&1 && break
  sleep 0.1
done

test=(--http "http://$HTTP_ADDR" --model "$MODEL" --rate "$RATE" --arrival poisson --duration "$DURATION"
  --warmup 1s --progress never)
start=$(date -u -d '+5 seconds' +%Y-%m-%dT%H:%M:%S.%NZ)
echo "== load average: $(cut -d" " -f1-3 /proc/loadavg)"
echo "== $N segments of: oipkit load ${test[*]} (shared start $start)"
for ((i = 0; i < N; i++)); do
  bin/oipkit load "${test[@]}" --segment "$i/$N" --start-at "$start" \
    --output "$OUT/segments/segment-$i.json" > "$OUT/segment-$i.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { rc=$?; echo "segment $i/$N: exit $rc (see $OUT/segment-$i.log)"; ((rc == 4)) || status=$rc; }
done
pids=()
((status == 0)) || exit "$status"

echo "== merge: oipkit report $OUT/segments"
rc=0
bin/oipkit report --threshold 'p99<1s' --output "$OUT/merged.json" --html "$OUT/merged.html" "$OUT/segments" || rc=$?
((rc == 0 || rc == 4)) || exit "$rc"

echo "== the same test in one process"
rc=0
bin/oipkit load "${test[@]}" --output "$OUT/single.json" > "$OUT/single.log" 2>&1 || rc=$?
((rc == 0 || rc == 4)) || { cat "$OUT/single.log"; exit "$rc"; }

check=(go run ./scripts/segmentcheck)
if ((RERUN)); then
  echo "== the same test in one process again"
  rc=0
  bin/oipkit load "${test[@]}" --output "$OUT/single-rerun.json" > "$OUT/single-rerun.log" 2>&1 || rc=$?
  ((rc == 0 || rc == 4)) || { cat "$OUT/single-rerun.log"; exit "$rc"; }
  check+=(-rerun "$OUT/single-rerun.json")
fi

echo "== comparison"
"${check[@]}" "$OUT/merged.json" "$OUT/single.json" "$OUT"/segments/segment-*.json
