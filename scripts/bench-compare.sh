#!/usr/bin/env bash
# bench-compare.sh — the performance targets of oipkit as ratios against
# anchor tools measured in the same run, on the same machine:
#
#   load generator   oipkit load beside ghz (gRPC) and wrk (REST JSON and REST
#                    binary) against `oipkit serve`: throughput and client CPU
#                    per request; beside perf_analyzer (scripts/perf-analyzer-
#                    compare.sh) over gRPC raw and REST binary; REST JSON at
#                    its default sampled answer checks beside none
#                    (--check-every 0);
#   reference server `oipkit serve` beside bench/bare (a bare net/http handler
#                    and a bare grpc-go service answering the same bytes),
#                    driven by the same client: wrk for REST, oipkit load
#                    --protocol grpc-raw for gRPC;
#   codecs           go test -bench: REST JSON request decode of a 1 MiB FP32
#                    tensor against encoding/json decoding the same array into
#                    []float32, and binary-extension decode against a copy of
#                    the same bytes.
#
# Writes reports/bench-compare.md (the raw measurements and the ratio table)
# and prints it.
#
#   scripts/bench-compare.sh [SECONDS]        (default 6; env DURATION too)
#
# Env: CONCURRENCY (16), PORT_BASE (18700: uses PORT_BASE..PORT_BASE+3, and
# +20/+21 for perf_analyzer), OUT (reports/bench-compare.md), ROUNDS (5: the
# whole sequence repeats and each row reports its median round; one round of
# a REST load run swings by ±15% on a shared 2-core machine, so a single
# round cannot tell 0.88 from 0.92), PERF_ANALYZER (1; 0 skips the
# perf_analyzer rows, which need root and Debian's mirror for a chroot on
# first use), LARGE (1; 0 skips the large-tensor section of
# scripts/bench-large.sh, which runs after the small-tensor rows with its own
# env: LARGE_DURATION, TRITON, LARGE_CASES; ports PORT_BASE+30..+37).
#
# Installs what it needs: ghz into .tools/bin with `go install` (pinned:
# `ghz@latest` resolves to the old v0.93.0 on the Go module proxy, v0.121.0 is
# the newest tag it serves), wrk, jq and GNU time from Debian when missing.
#
# Client CPU is the user+system time of each client process from GNU time,
# divided by the requests it completed. Every tool sends add_sub with
# INPUT0/INPUT1 INT32 [1,16], the same numbers in each tool's spelling (ghz's
# JSON with typed int_contents like oipkit --protocol grpc, wrk's Lua bodies,
# oipkit's input-data file). Nothing is warmed up for any tool, and oipkit's
# CPU includes its start-up (readiness and metadata calls). Client and
# servers share the machine's cores: each client cycle is one the server does
# not get, which is why client CPU matters.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${1:-${DURATION:-6}}
CONCURRENCY=${CONCURRENCY:-16}
PORT_BASE=${PORT_BASE:-18700}
HTTP_PORT=$PORT_BASE
GRPC_PORT=$((PORT_BASE + 1))
BARE_HTTP_PORT=$((PORT_BASE + 2))
BARE_GRPC_PORT=$((PORT_BASE + 3))
# The honest anchors' servers: the reference on net/http alone at the bare
# server's GOGC, and the reference with its raw-syscall layer off.
NETHTTP_PORT=$((PORT_BASE + 4))
NORAWTCP_PORT=$((PORT_BASE + 5))
OUT=${OUT:-reports/bench-compare.md}
PERF_ANALYZER=${PERF_ANALYZER:-1}
ROUNDS=${ROUNDS:-5}
GHZ_VERSION=v0.121.0
TOOLS=$ROOT/.tools/bin
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh # after the cd to the repository root above

mkdir -p "$TOOLS"
if [[ ! -x $TOOLS/ghz ]]; then
	echo "installing ghz $GHZ_VERSION into .tools/bin" >&2
	GOBIN=$TOOLS go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi
command -v wrk >/dev/null || scripts/apt-install.sh wrk
command -v jq >/dev/null || scripts/apt-install.sh jq
[[ -x /usr/bin/time ]] || scripts/apt-install.sh time

echo "building oipkit and bench/bare" >&2
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/bare ./bench/bare
OIPKIT=$ROOT/bin/oipkit

# One request, four spellings.
A=$(seq -s, 1 16)
B=$(seq -s, 101 116)
cat >"$WORK/input.json" <<EOF
{"data": [{"INPUT0": {"content": [$A], "shape": [1, 16]}, "INPUT1": {"content": [$B], "shape": [1, 16]}}]}
EOF
cat >"$WORK/ghz.json" <<EOF
{"model_name": "add_sub", "inputs": [
 {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "contents": {"int_contents": [$A]}},
 {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "contents": {"int_contents": [$B]}}]}
EOF
# The bodies oipkit load sends for --protocol http and http-binary, byte for byte.
BODY="{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,16],\"datatype\":\"INT32\",\"data\":[$A]},{\"name\":\"INPUT1\",\"shape\":[1,16],\"datatype\":\"INT32\",\"data\":[$B]}]}"
printf '%s' "$BODY" >"$WORK/body.json"
cat >"$WORK/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
EOF
BIN_HEADER='{"parameters":{"binary_data_output":true},"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}]}'
cat >"$WORK/post-binary.lua" <<EOF
local header = '$BIN_HEADER'
local function int32s(first, last)
  local t = {}
  for v = first, last do
    t[#t + 1] = string.char(v % 256, math.floor(v / 256) % 256, math.floor(v / 65536) % 256, math.floor(v / 16777216) % 256)
  end
  return table.concat(t)
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = tostring(#header)
wrk.body = header .. int32s(1, 16) .. int32s(101, 116)
EOF

wait_for() { # wait_for CMD...: retry CMD for 10 s
	for _ in $(seq 100); do
		"$@" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no answer from: $*" >&2
	exit 1
}
# At info, serve logs its start and stop lines only; the start line gives
# the GOGC it runs with (gc_percent), which the report quotes.
"$OIPKIT" serve --http "127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" --log-level info 2> >(tee "$WORK/serve.log" >&2) &
PIDS+=($!)
bin/bare --request "$WORK/body.json" --http "127.0.0.1:$BARE_HTTP_PORT" --grpc "127.0.0.1:$BARE_GRPC_PORT" &
PIDS+=($!)
"$OIPKIT" serve --http "127.0.0.1:$NETHTTP_PORT" --grpc "" --http-fast-path=false --gc-percent "${GOGC:-100}" --log-level error &
PIDS+=($!)
OIPKIT_RAWTCP=off "$OIPKIT" serve --http "127.0.0.1:$NORAWTCP_PORT" --grpc "" --log-level error &
PIDS+=($!)
wait_for curl -fsS -o /dev/null "http://127.0.0.1:$HTTP_PORT/v2/models/add_sub/ready"
wait_for curl -fsS -o /dev/null "http://127.0.0.1:$NETHTTP_PORT/v2/models/add_sub/ready"
wait_for curl -fsS -o /dev/null "http://127.0.0.1:$NORAWTCP_PORT/v2/models/add_sub/ready"
wait_for curl -fsS -o /dev/null -X POST --data-binary @"$WORK/body.json" "http://127.0.0.1:$BARE_HTTP_PORT/v2/models/add_sub/infer"

# timed NAME CMD...: run CMD under GNU time; stdout to $WORK/NAME.rROUND.out,
# CPU seconds (user+sys) to $WORK/NAME.rROUND.cpu.
timed() {
	local name=$1.r$ROUND
	shift
	echo "running $name: $*" >&2
	/usr/bin/time -f '%U %S' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" || {
		local rc=$?
		# oipkit exits 3/4 on failed requests/generator-bound; the numbers
		# still count, and the failures show in the table.
		[[ $name == oipkit* && $rc -ge 3 ]] || { cat "$WORK/$name.out" >&2; exit "$rc"; }
	}
	awk '{print $1 + $2}' "$WORK/$name.time" >"$WORK/$name.cpu"
}
oipkit_load() { # oipkit_load NAME TARGET-FLAGS PROTOCOL CONNECTIONS [FLAGS...]
	# shellcheck disable=SC2086 # $2 is two words
	timed "$1" "$OIPKIT" load $2 --protocol "$3" --model add_sub \
		--input-data "$WORK/input.json" --concurrency "$CONCURRENCY" --connections "$4" \
		--duration "${DURATION}s" --progress never --format json "${@:5}"
}
ref_grpc="--grpc 127.0.0.1:$GRPC_PORT"
ref_http="--http http://127.0.0.1:$HTTP_PORT"
infer_url="http://127.0.0.1:$HTTP_PORT/v2/models/add_sub/infer"

# The generator against wrk: each pair runs back to back on the same
# server, wrk first in odd rounds and oipkit first in even ones, so that the
# server's state after the first run (its heap, its caches) favours neither
# tool over the rounds. The REST JSON run without sampled checks sits on
# the other side of the sampled one, next to it in every round too.
pair() { if ((ROUND % 2)); then "$1"; "$2"; else "$2"; "$1"; fi; }
wrk_json() { timed wrk wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post.lua" "$infer_url"; }
oipkit_json() {
	# The sampled answer checks' cost: the same run with none (framing only).
	nocheck() { oipkit_load oipkit-http-nocheck "$ref_http" http "$CONCURRENCY" --check-every 0; }
	if ((ROUND % 2)); then
		oipkit_load oipkit-http "$ref_http" http "$CONCURRENCY"
		nocheck
	else
		nocheck
		oipkit_load oipkit-http "$ref_http" http "$CONCURRENCY"
	fi
}
wrk_binary() { timed wrk-binary wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post-binary.lua" "$infer_url"; }
oipkit_binary() {
	# A/B: the generator's event loop off (a goroutine per connection), and
	# then its raw-syscall layer too (the event loop does not use it); each
	# next to the run it is compared with.
	local runs=(binary noloop norawtcp)
	((ROUND % 2)) || runs=(norawtcp noloop binary)
	for run in "${runs[@]}"; do
		case $run in
		binary) oipkit_load oipkit-http-binary "$ref_http" http-binary "$CONCURRENCY" ;;
		noloop) OIPKIT_EVENT_LOOP=off oipkit_load oipkit-http-binary-noloop "$ref_http" http-binary "$CONCURRENCY" ;;
		norawtcp) OIPKIT_EVENT_LOOP=off OIPKIT_RAWTCP=off oipkit_load oipkit-http-binary-norawtcp "$ref_http" http-binary "$CONCURRENCY" ;;
		esac
	done
}

# Runs that are compared run next to each other, so that a change in the
# machine's load in between affects both less. With ROUNDS > 1 the whole
# sequence repeats and each row reports its median round (by throughput).
for ROUND in $(seq "$ROUNDS"); do
	timed ghz "$TOOLS/ghz" --insecure --proto specs/proto/inference.proto \
		--call inference.GRPCInferenceService.ModelInfer -D "$WORK/ghz.json" \
		-c "$CONCURRENCY" --connections 1 -z "${DURATION}s" --format json "127.0.0.1:$GRPC_PORT"
	oipkit_load oipkit-grpc "$ref_grpc" grpc 1
	oipkit_load oipkit-grpc-raw "$ref_grpc" grpc-raw 1
	# A/B: the generator's lean HTTP/2 transport off (grpc-go instead).
	OIPKIT_LEAN_GRPC=off oipkit_load oipkit-grpc-raw-nolean "$ref_grpc" grpc-raw 1
	oipkit_load oipkit-grpc-raw-bare "--grpc 127.0.0.1:$BARE_GRPC_PORT" grpc-raw 1
	timed wrk-bare wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post.lua" \
		"http://127.0.0.1:$BARE_HTTP_PORT/v2/models/add_sub/infer"
	# The reference on net/http alone, next to the bare net/http handler.
	timed wrk-nethttp wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post.lua" \
		"http://127.0.0.1:$NETHTTP_PORT/v2/models/add_sub/infer"
	# A/B: the reference's raw-syscall layer off.
	timed wrk-norawtcp wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post.lua" \
		"http://127.0.0.1:$NORAWTCP_PORT/v2/models/add_sub/infer"
	pair wrk_json oipkit_json
	pair wrk_binary oipkit_binary
done

# perf_analyzer: its own script, ports and concurrency (its default
# measurement needs three stable windows).
pa_note="not run (PERF_ANALYZER=0)"
if [[ $PERF_ANALYZER != 0 ]]; then
	echo "running scripts/perf-analyzer-compare.sh" >&2
	if HTTP_PORT=$((PORT_BASE + 20)) GRPC_PORT=$((PORT_BASE + 21)) OUT=$WORK/pa.md \
		scripts/perf-analyzer-compare.sh >"$WORK/pa.log" 2>&1; then
		pa_note="from scripts/perf-analyzer-compare.sh, run right after"
	else
		pa_note="not run: scripts/perf-analyzer-compare.sh failed ($(tail -1 "$WORK/pa.log"))"
		echo "perf_analyzer: $pa_note" >&2
	fi
fi

echo "running codec benchmarks" >&2
go test -run '^$' -bench 'JSONDecodeFP32_1MiB|BinaryDecodeFP32_1MiB' -benchtime 2s -count 5 ./oip/ >"$WORK/codec.txt"

ms() { awk -v ns="$1" 'BEGIN { printf "%.3f", ns / 1e6 }'; }
# wrk prints latencies as 1.23ms / 456.78us / 1.2s.
wrk_ms() { awk -v v="$1" 'BEGIN { u = v; sub(/[0-9.]+/, "", u); n = v + 0;
	if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.3f", n }'; }

# Each measured run leaves NAME.rROUND.{n,rps,p50,p99,cpu,err} in $WORK;
# NAME.{...} is then the median round.
record() { # record NAME N RPS P50_MS P99_MS ERRORS
	echo "$2" >"$WORK/$1.n"
	echo "$3" >"$WORK/$1.rps"
	echo "$4" >"$WORK/$1.p50"
	echo "$5" >"$WORK/$1.p99"
	echo "$6" >"$WORK/$1.err"
}
for ROUND in $(seq "$ROUNDS"); do
	g=$WORK/ghz.r$ROUND.out
	record "ghz.r$ROUND" "$(jq '.count' "$g")" "$(jq '.rps' "$g")" \
		"$(ms "$(jq '[.latencyDistribution[] | select(.percentage == 50)][0].latency' "$g")")" \
		"$(ms "$(jq '[.latencyDistribution[] | select(.percentage == 99)][0].latency' "$g")")" \
		"$(jq '[.statusCodeDistribution // {} | to_entries[] | select(.key != "OK") | .value] | add // 0' "$g")"
	for n in oipkit-grpc oipkit-grpc-raw oipkit-grpc-raw-bare oipkit-grpc-raw-nolean oipkit-http oipkit-http-nocheck oipkit-http-binary oipkit-http-binary-noloop oipkit-http-binary-norawtcp; do
		o=$WORK/$n.r$ROUND.out
		record "$n.r$ROUND" "$(jq '.counts.completed' "$o")" "$(jq '.rates.completed' "$o")" \
			"$(ms "$(jq '.latency.response.p50Ns' "$o")")" "$(ms "$(jq '.latency.response.p99Ns' "$o")")" \
			"$(jq '.counts.errors + .counts.timeouts' "$o")"
	done
	for n in wrk wrk-binary wrk-bare wrk-nethttp wrk-norawtcp; do
		w=$WORK/$n.r$ROUND.out
		record "$n.r$ROUND" "$(awk '/requests in/ { print $1 }' "$w")" "$(awk '/^Requests\/sec/ { print $2 }' "$w")" \
			"$(wrk_ms "$(awk '$1 == "50%" { print $2 }' "$w")")" "$(wrk_ms "$(awk '$1 == "99%" { print $2 }' "$w")")" \
			"$(awk '/Non-2xx|Socket errors/ { sub(/^ +/, ""); printf "%s; ", $0 }' "$w" | sed 's/; $//')"
	done
done
for n in ghz oipkit-grpc oipkit-grpc-raw oipkit-grpc-raw-bare oipkit-grpc-raw-nolean oipkit-http oipkit-http-nocheck oipkit-http-binary oipkit-http-binary-noloop oipkit-http-binary-norawtcp wrk wrk-binary wrk-bare wrk-nethttp wrk-norawtcp; do
	med=$(for r in $(seq "$ROUNDS"); do echo "$(cat "$WORK/$n.r$r.rps") $r"; done | sort -n | awk '{ a[NR] = $2 } END { print a[int((NR + 1) / 2)] }')
	for f in n rps p50 p99 err cpu; do cp "$WORK/$n.r$med.$f" "$WORK/$n.$f"; done
	echo "$(for r in $(seq "$ROUNDS"); do printf '%.0f ' "$(cat "$WORK/$n.r$r.rps")"; done)" >"$WORK/$n.all"
done

v() { cat "$WORK/$1.$2"; }
cpu_per_k() { awk -v c="$(cat "$WORK/$1.cpu")" -v n="$(v "$1" n)" 'BEGIN { printf "%.3f", (n > 0 ? 1000 * c / n : 0) }'; }
row() { # row NAME CLIENT SERVER PROTOCOL
	printf '| %s | %s | %s | %d | %.0f | %s | %s | %s | %.2f | %s | %s |\n' "$2" "$3" "$4" "$(v "$1" n)" "$(v "$1" rps)" \
		"$(v "$1" all)" "$(v "$1" p50)" "$(v "$1" p99)" "$(cat "$WORK/$1.cpu")" "$(cpu_per_k "$1")" "$(v "$1" err)"
}
# ratio NUM DEN: NUM/DEN with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
# target WHAT ANCHOR ANCHOR_VALUE OIPKIT_VALUE GOAL(>=x|<=x) [ROUND RATIOS]
target() {
	local r ok
	r=$(ratio "$4" "$3")
	ok=$(awk -v r="$r" -v g="$5" 'BEGIN { op = substr(g, 1, 2); x = substr(g, 3) + 0;
		if (r == "n/a" || g == "") print "–"; else if ((op == ">=" && r >= x) || (op == "<=" && r <= x)) print "met"; else print "**not met**" }')
	printf '| %s | %s | %s | %s | %s× | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$r" "${5/>=/≥ }" "$ok" "${6:-}" | sed 's/<=/≤ /'
}
# paired WHAT ANCHOR ANCHOR_RUN OIPKIT_RUN METRIC GOAL: a target whose two
# runs are measured in every round, next to each other: the ratio of each
# round, and the row of the round with the median ratio (the pairing cancels
# most of a busy machine's drift).
paired() {
	local rounds med
	rounds=$(for r in $(seq "$ROUNDS"); do
		echo "$("$5" "$3" ".r$r") $("$5" "$4" ".r$r")"
	done | awk '{ printf "%s %s %s\n", (($1 > 0) ? $2 / $1 : 0), $1, $2 }' | sort -g)
	med=$(awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)' <<<"$rounds")
	target "$1" "$2" "$(awk '{ print $2 }' <<<"$med")" "$(awk '{ print $3 }' <<<"$med")" "$6" \
		"$(awk '{ printf "%.2f ", $1 }' <<<"$rounds")"
}
# cpu_req_us NAME [.rROUND], rps NAME [.rROUND]: one run's figures.
cpu_req_us() { awk -v c="$(cat "$WORK/$1$2.cpu")" -v n="$(cat "$WORK/$1$2.n")" 'BEGIN { printf "%.1f", (n > 0 ? 1e6 * c / n : 0) }'; }
rps() { printf '%.0f' "$(cat "$WORK/$1$2.rps")"; }
pa_rps() { # pa_rps CLIENT-PREFIX PROTOCOL: throughput from perf-analyzer-compare's table
	[[ -f $WORK/pa.md ]] || { echo 0; return; }
	awk -F'|' -v c="$1" -v p="$2" '{ gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); gsub(/^ +| +$/, "", $4) }
		index($2, c) == 1 && $3 == p { print $4; exit }' "$WORK/pa.md"
}
# Codec: median of column COL (3: ns/op, 5: MB/s) of a benchmark over the -count runs.
bench_med() { awk -v b="$1" -v c="$2" '$1 ~ "^Benchmark" b "(-[0-9]+)?$" { print $c }' "$WORK/codec.txt" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

{
	echo "# oipkit performance targets: ratios against anchors measured in the same run"
	echo
	echo "Written by \`make bench-compare\` (scripts/bench-compare.sh) on $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) cores shared by servers and clients, loopback, add_sub (INT32 [1,16] ×2), closed loop at concurrency $CONCURRENCY for ${DURATION}s per run, $ROUNDS round(s) (each row: its median round), one connection for gRPC, $CONCURRENCY keep-alive connections for REST (wrk -t 2); nothing warmed up. oipkit $("$OIPKIT" version | awk '{print $2}'), ghz $GHZ_VERSION, $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}'), $(go version | awk '{print $3}'). Load average before the runs: ${LOADAVG:-$(cut -d' ' -f1-3 /proc/loadavg)}."
	echo
	echo "## Ratios"
	echo
	echo "| target | anchor | anchor | oipkit | ratio | goal | | ratio of each round |"
	echo "|---|---|---:|---:|---:|---|---|---|"
	paired "gRPC load, req/s" "ghz" ghz oipkit-grpc rps ">=2.5"
	paired "gRPC client CPU per request (µs)" "ghz" ghz oipkit-grpc cpu_req_us "<=0.2"
	paired "REST JSON load, req/s" "wrk" wrk oipkit-http rps ">=0.9"
	paired "REST JSON client CPU per request (µs)" "wrk" wrk oipkit-http cpu_req_us "<=1.5"
	paired "REST binary load, req/s" "wrk" wrk-binary oipkit-http-binary rps ">=0.9"
	paired "REST binary client CPU per request (µs)" "wrk" wrk-binary oipkit-http-binary cpu_req_us "<=1.5"
	paired "REST JSON load, default sampling vs none, req/s" "--check-every 0" oipkit-http-nocheck oipkit-http rps ">=0.95"
	paired "REST JSON client CPU per request, default sampling vs none (µs)" "--check-every 0" oipkit-http-nocheck oipkit-http cpu_req_us "<=1.05"
	target "gRPC raw load at concurrency 4, req/s" "perf_analyzer" "$(pa_rps perf_analyzer "gRPC raw")" "$(pa_rps "oipkit load" "gRPC raw")" ">=1.3"
	target "REST binary load at concurrency 4, req/s" "perf_analyzer" "$(pa_rps perf_analyzer "REST binary")" "$(pa_rps "oipkit load" "REST binary")" ">=1.3"
	paired "reference REST server, req/s (wrk driving both)" "bare net/http" wrk-bare wrk rps ">=0.8"
	paired "reference gRPC server, req/s (oipkit grpc-raw driving both)" "bare grpc-go" oipkit-grpc-raw-bare oipkit-grpc-raw rps ">=0.95"
	paired "reference REST server on net/http alone (--http-fast-path=false, GOGC ${GOGC:-100}), req/s (wrk)" "bare net/http, GOGC ${GOGC:-100}" wrk-bare wrk-nethttp rps ""
	paired "what the raw-syscall layer buys the reference REST server, req/s (wrk)" "OIPKIT_RAWTCP=off" wrk-norawtcp wrk rps ""
	paired "what the event loop buys the generator, REST binary, req/s" "OIPKIT_EVENT_LOOP=off" oipkit-http-binary-noloop oipkit-http-binary rps ""
	paired "what the event loop buys the generator, REST binary client CPU per request (µs)" "OIPKIT_EVENT_LOOP=off" oipkit-http-binary-noloop oipkit-http-binary cpu_req_us ""
	paired "what the raw-syscall layer buys the generator without the event loop, REST binary, req/s" "OIPKIT_EVENT_LOOP=off OIPKIT_RAWTCP=off" oipkit-http-binary-norawtcp oipkit-http-binary-noloop rps ""
	paired "what the raw-syscall layer buys the generator without the event loop, REST binary client CPU per request (µs)" "OIPKIT_EVENT_LOOP=off OIPKIT_RAWTCP=off" oipkit-http-binary-norawtcp oipkit-http-binary-noloop cpu_req_us ""
	paired "what the lean gRPC transport buys the generator, gRPC raw, req/s" "OIPKIT_LEAN_GRPC=off" oipkit-grpc-raw-nolean oipkit-grpc-raw rps ""
	paired "what the lean gRPC transport buys the generator, gRPC raw client CPU per request (µs)" "OIPKIT_LEAN_GRPC=off" oipkit-grpc-raw-nolean oipkit-grpc-raw cpu_req_us ""
	target "REST JSON request decode, 1 MiB FP32 (MB/s of JSON)" "encoding/json into []float32" \
		"$(bench_med RESTJSONDecodeFP32_1MiB/encoding-json 5)" "$(bench_med RESTJSONDecodeFP32_1MiB/oipkit 5)" ">=4"
	target "REST binary request decode, 1 MiB FP32 (ns)" "copy of the bytes" \
		"$(bench_med RESTBinaryDecodeFP32_1MiB/copy 3)" "$(bench_med RESTBinaryDecodeFP32_1MiB/oipkit 3)" "<=2"
	echo
	echo "Paired rows run next to each other in each round (the REST rows against wrk in alternating order: wrk first in odd rounds, oipkit first in even ones); the row shows the round with the median ratio. perf_analyzer rows: $pa_note. Codec rows: median of 5 runs of \`go test -bench 'JSONDecodeFP32_1MiB|BinaryDecodeFP32_1MiB' ./oip/\`. Each server runs as it ships: \`oipkit serve\` with GOGC $(grep -o 'gc_percent=[^ ]*' "$WORK/serve.log" | head -1 | cut -d= -f2) (\`--gc-percent\`), bench/bare with GOGC ${GOGC:-100} (Go's default unless GOGC is set)."
	echo
	echo "## Measurements"
	echo
	echo "| client | server | protocol | requests | throughput (req/s) | every round (req/s) | p50 (ms) | p99 (ms) | client CPU (s) | CPU s / 1000 req | non-OK |"
	echo "|---|---|---|---:|---:|---|---:|---:|---:|---:|---|"
	row ghz ghz reference "gRPC typed"
	row oipkit-grpc "oipkit load" reference "gRPC typed"
	row oipkit-grpc-raw "oipkit load" reference "gRPC raw"
	row oipkit-grpc-raw-bare "oipkit load" "bare grpc-go" "gRPC raw"
	row wrk wrk reference "REST JSON"
	row oipkit-http "oipkit load" reference "REST JSON"
	row oipkit-http-nocheck "oipkit load --check-every 0" reference "REST JSON"
	row wrk-binary wrk reference "REST binary"
	row oipkit-http-binary "oipkit load" reference "REST binary"
	row wrk-bare wrk "bare net/http" "REST JSON"
	row wrk-nethttp wrk "reference, --http-fast-path=false, GOGC ${GOGC:-100}" "REST JSON"
	row wrk-norawtcp wrk "reference, OIPKIT_RAWTCP=off" "REST JSON"
	row oipkit-grpc-raw-nolean "oipkit load, OIPKIT_LEAN_GRPC=off" reference "gRPC raw"
	row oipkit-http-binary-noloop "oipkit load, OIPKIT_EVENT_LOOP=off" reference "REST binary"
	row oipkit-http-binary-norawtcp "oipkit load, OIPKIT_EVENT_LOOP=off OIPKIT_RAWTCP=off" reference "REST binary"
	echo
	echo "Latency is each client's own measurement: oipkit's response time (in a closed loop, from the actual send), ghz's latency distribution, wrk's --latency distribution. ghz counts calls cut off by its -z deadline as non-OK."
	if [[ -f $WORK/pa.md ]]; then
		echo
		sed -n '/^| client/,$p' "$WORK/pa.md"
	fi
} >"$WORK/table.md"

if [[ ${LARGE:-1} != 0 ]]; then
	echo >>"$WORK/table.md"
	ROUNDS=$ROUNDS PORT_BASE=$PORT_BASE PERF_ANALYZER=$PERF_ANALYZER scripts/bench-large.sh >>"$WORK/table.md"
fi
# Streaming and memory rows (STREAM=0, MEMORY=0 skip them). The memory runs
# hold 10,000 connections: MEMORY_ROUNDS (3) of them, not ROUNDS.
if [[ ${STREAM:-1} != 0 ]]; then
	echo >>"$WORK/table.md"
	ROUNDS=$ROUNDS STREAM_PORT_BASE=$((PORT_BASE + 60)) scripts/bench-stream.sh "$DURATION" >>"$WORK/table.md"
fi
if [[ ${MEMORY:-1} != 0 ]]; then
	echo >>"$WORK/table.md"
	ROUNDS=${MEMORY_ROUNDS:-3} MEMORY_PORT_BASE=$((PORT_BASE + 70)) scripts/bench-memory.sh >>"$WORK/table.md"
fi

mkdir -p "$(dirname "$OUT")"
cp "$WORK/table.md" "$OUT"
cat "$OUT"
