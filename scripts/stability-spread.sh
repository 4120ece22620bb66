#!/usr/bin/env bash
# Measures the run-to-run spread of `oipkit load --stability` against fixed-window runs on the
# same target (the reference server's add_sub over gRPC raw): N runs of each, interleaved so
# that drift of the machine hits both alike, for each scenario (default a closed loop at
# concurrency 4 and an open loop at 1000 requests/s). Prints a Markdown table of the mean,
# standard deviation and coefficient of variation of throughput and p99 per method, with the
# measurement time and convergence.
#   N=5 FIXED=10s TOL=5% MAX=60s SCENARIOS='closed:--concurrency 4;open:--rate 1000' \
#     scripts/stability-spread.sh > reports/load/stability-spread.md
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-5}
FIXED=${FIXED:-10s}
TOL=${TOL:-5%}
MAX=${MAX:-60s}
SCENARIOS=${SCENARIOS:-closed:--concurrency 4;open:--rate 1000}
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:18610}
GRPC_ADDR=${GRPC_ADDR:-127.0.0.1:18611}
OUT=$(mktemp -d)
bin/oipkit serve --http "$HTTP_ADDR" --grpc "$GRPC_ADDR" --log-level warn >"$OUT/serve.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP_ADDR/v2/health/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
load() { bin/oipkit load --grpc "$GRPC_ADDR" --model add_sub --warmup 1s --progress never --format json "$@" >/dev/null || true; }
IFS=';' read -ra scenarios <<<"$SCENARIOS"
for scenario in "${scenarios[@]}"; do
  name=${scenario%%:*}
  args=${scenario#*:}
  for i in $(seq 1 "$N"); do
    # shellcheck disable=SC2086
    load $args --duration "$FIXED" --output "$OUT/$name-fixed-$i.json"
    # shellcheck disable=SC2086
    load $args --stability "$TOL" --max-duration "$MAX" --output "$OUT/$name-stable-$i.json"
  done
done
python3 - "$OUT" "$N" "$FIXED" "$TOL" "$MAX" "$SCENARIOS" <<'PY'
import glob, json, re, statistics, sys
out, n, fixed, tol, mx, scenarios = sys.argv[1:]
UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
def seconds(d):  # a Go duration string
    return sum(float(v) * UNITS[u] for v, u in re.findall(r"([0-9.]+)(h|ms|m|s|us|µs|ns)", d))
print(f"Run-to-run spread, {n} runs per row, interleaved: fixed {fixed} windows against `--stability {tol} --max-duration {mx}`")
print("(reference server, add_sub over gRPC raw, 1s warm-up; CV = standard deviation / mean).\n")
print("| load | method | throughput mean (req/s) | throughput CV | p99 mean (ms) | p99 CV | p99 min–max (ms) | measured (s, mean) | converged | generator-bound |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for sc in scenarios.split(";"):
    name, label = sc.split(":", 1)
    for method in ("fixed", "stable"):
        rs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{name}-{method}-*.json"))]
        rs = [r for r in rs if r.get("endReason") in ("completed",)]
        if not rs:
            continue
        thr = [r["rates"]["completed"] for r in rs]
        p99 = [r["latency"]["response"]["p99Ns"] / 1e6 for r in rs]
        dur = [seconds(r["duration"]) for r in rs]
        conv = sum(1 for r in rs if (r.get("stability") or {}).get("converged"))
        gb = sum(1 for r in rs if r["checks"].get("generatorBound"))
        cv = lambda xs: statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else 0
        conv_s = f"{conv}/{len(rs)}" if method == "stable" else "-"
        print(f"| {label} | {'fixed ' + fixed if method == 'fixed' else '--stability ' + tol} | {statistics.mean(thr):.0f} | {100*cv(thr):.1f}% | "
              f"{statistics.mean(p99):.3f} | {100*cv(p99):.1f}% | {min(p99):.3f}–{max(p99):.3f} | {statistics.mean(dur):.1f} | {conv_s} | {gb}/{len(rs)} |")
PY
