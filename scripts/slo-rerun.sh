#!/usr/bin/env bash
# Runs the same SLO search N times against the reference server's delay fixture and prints,
# as Markdown, each search's answer (the highest rate that held, the lowest that failed, the
# probes) and how far the reruns landed from each other against the stated resolution.
#
# The server runs delay on INSTANCES execution instances (`oipkit serve --instances`, Triton's
# instance_group count): with one instance of a 2 ms service the model's capacity is about
# 450/s, and under Poisson arrivals (the same seeded schedule in every probe and rerun) the p99
# grows with the queue long before the CPU is busy, so the bound is a property of the queue,
# not of the machine's scheduling noise. Without a limit (INSTANCES=0) every request runs at
# once and the only limit is the CPU that generator and server share.
#
# The default bound, p99<20ms, sits well above the p99 a busy shared machine adds by itself
# (about 5 ms at a load average of 5 on 2 cores, where a 1 ms service's p99<5ms cannot hold at
# any rate); on an idle machine SLO='p99<5ms' PARAMS='--param delay_ms=1' works the same way.
# For the same reason the generator may lag its schedule by 5 ms at p99 (--lag-tolerance;
# default 2 ms) before a probe counts as generator-bound: the response time is measured from
# the intended start, so the lag is inside the p99 that the bound judges.
#   N=2 SLO='p99<20ms' PARAMS='--param delay_ms=2' DURATION=10s INSTANCES=1 scripts/slo-rerun.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2}
SLO=${SLO:-p99<20ms}
PARAMS=${PARAMS:---param delay_ms=2}
DURATION=${DURATION:-10s}
INSTANCES=${INSTANCES:-1}
EXTRA=${EXTRA:---arrival poisson --lag-tolerance 5ms}
FLOOR_RATE=${FLOOR_RATE:-62}
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:18620}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:18621}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
serve=(bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" --log-level warn)
((INSTANCES > 0)) && serve+=(--instances "delay=$INSTANCES")
"${serve[@]}" >"$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
# The machine's own floor under the bound: add_sub (no service time) at a low fixed rate, before
# the searches and after them; its p99 is what any level's p99 starts from.
floor() {
  # shellcheck disable=SC2086
  bin/oipkit load --grpc "$GRPC_ADDR" --model add_sub --rate "$FLOOR_RATE" --duration "$DURATION" --warmup 1s $EXTRA \
    --progress never --output "$OUT/floor-$1.json" > "$OUT/floor-$1.txt" 2>&1 || true
}
floor before
for i in $(seq 1 "$N"); do
  cut -d' ' -f1-3 /proc/loadavg > "$OUT/loadavg-$i.txt"
  # shellcheck disable=SC2086
  bin/oipkit load --grpc "$GRPC_ADDR" --model delay $PARAMS --slo "$SLO" --duration "$DURATION" --warmup 1s $EXTRA \
    --progress never --output "$OUT/search-$i.json" > "$OUT/search-$i.txt" || true
done
floor after
python3 - "$OUT" "$N" "$SLO" "$PARAMS" "$DURATION" "$EXTRA" "$INSTANCES" "$FLOOR_RATE" <<'PY'
import json, sys
out, n, slo, params, duration, extra, instances, floor_rate = sys.argv[1:]
server = f"`oipkit serve --instances delay={instances}`" if instances != "0" else "`oipkit serve` (no instance limit)"
print(f"{server}; `oipkit load --model delay {params} --slo '{slo}' --duration {duration} --warmup 1s {extra}`, {n} runs:\n")
print("| run | holds (req/s) | lowest failing (req/s) | probes | verdict | summary |")
print("|---|---:|---:|---:|---|---|")
found = []
for i in range(1, int(n) + 1):
    r = json.load(open(f"{out}/search-{i}.json"))
    s = r.get("search") or {}
    probes = sum(1 for st in r.get("steps", []) if st.get("verdict") != "calibration")
    if s.get("found"):
        found.append((s["holds"], s.get("fails", 0)))
    load = open(f"{out}/loadavg-{i}.txt").read().strip()
    print(f"| {i} (load {load}) | {s.get('holds', 0):.0f} | {s.get('fails', 0):.0f} | {probes} | "
          f"{'limited by the generator' if s.get('limited') else ('found' if s.get('found') else 'none holds')} | {s.get('summary', '')} |")
    for st in r.get("steps", []):
        lvl = f"{st['rate']:.0f}/s" if st.get("rate") else f"c={st.get('concurrency')}"
        p99 = st["latency"]["response"]["p99Ns"] / 1e6
        print(f"|  | probe {lvl} | p99 {p99:.2f} ms | {st['rates']['completed']:.0f}/s | {st.get('verdict','')} | {st.get('why','')} |")
print(f"\nThe machine's floor: `oipkit load --model add_sub --rate {floor_rate} --duration {duration} --warmup 1s {extra}` (no service time), before and after the searches:\n")
print("| when | p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | send lag p99 (ms) | generator hiccup p99 / max (ms) |")
print("|---|---:|---:|---:|---:|---:|---|")
for when in ("before", "after"):
    try:
        r = json.load(open(f"{out}/floor-{when}.json"))
    except (OSError, ValueError):
        print(f"| {when} | no result | | | | | |")
        continue
    lat, ck = r["latency"]["response"], r.get("checks", {})
    ms = lambda v: f"{v / 1e6:.2f}"
    print(f"| {when} | {ms(lat['p50Ns'])} | {ms(lat['p99Ns'])} | {ms(lat['p99.9Ns'])} | {ms(lat['maxNs'])} | "
          f"{ms(r['latency']['sendLag']['p99Ns'])} | {ms(ck.get('hiccupP99Ns', 0))} / {ms(ck.get('hiccupMaxNs', 0))} |")
if len(found) >= 2:
    res = json.load(open(f"{out}/search-1.json"))["search"]["resolution"]
    lo, hi = min(h for h, _ in found), max(h for h, _ in found)
    print(f"\nReruns: highest holding rates from {lo:.0f} to {hi:.0f} req/s, {100*(hi-lo)/lo:.1f}% apart; stated resolution {100*res:.0f}%.")
PY
