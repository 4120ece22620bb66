#!/usr/bin/env bash
# bench-compare.sh — oipkit load next to ghz (gRPC) and wrk (REST) against the
# reference server, same model, same request, same concurrency and duration,
# one after the other in one invocation. Writes a Markdown table to
# reports/bench-compare.md and prints it.
#
#   scripts/bench-compare.sh [SECONDS]        (default 10; env DURATION too)
#
# Env: CONCURRENCY (16), HTTP_PORT (18700), GRPC_PORT (18701), OUT
# (reports/bench-compare.md).
#
# Installs what it needs: ghz into .tools/bin with `go install` (pinned:
# `ghz@latest` resolves to the old v0.93.0 on the Go module proxy, v0.121.0 is
# the newest tag it serves), wrk, jq and GNU time from Debian when missing.
#
# Client CPU is the user+system time of each client process from GNU time
# (`/usr/bin/time -f`), divided by the requests it completed. Every tool sends
# add_sub with INPUT0/INPUT1 INT32 [1,16]: the same numbers in ghz's JSON (typed
# int_contents, like oipkit --protocol grpc), wrk's JSON body and oipkit's
# input-data file. Nothing is warmed up for any tool, and oipkit's CPU includes
# its start-up (readiness and metadata calls).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${1:-${DURATION:-10}}
CONCURRENCY=${CONCURRENCY:-16}
HTTP_PORT=${HTTP_PORT:-18700}
GRPC_PORT=${GRPC_PORT:-18701}
OUT=${OUT:-reports/bench-compare.md}
GHZ_VERSION=v0.121.0
TOOLS=$ROOT/.tools/bin
WORK=$(mktemp -d)
SERVER_PID=

cleanup() {
	if [[ -n $SERVER_PID ]]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

apt_install() { # apt_install PACKAGE: install a Debian package once
	if [[ ${APT_UPDATED:-} != 1 ]]; then
		apt-get update -qq >/dev/null
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
}

mkdir -p "$TOOLS"
if [[ ! -x $TOOLS/ghz ]]; then
	echo "installing ghz $GHZ_VERSION into .tools/bin" >&2
	GOBIN=$TOOLS go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi
command -v wrk >/dev/null || apt_install wrk
command -v jq >/dev/null || apt_install jq
[[ -x /usr/bin/time ]] || apt_install time

echo "building oipkit" >&2
go build -o bin/oipkit ./cmd/oipkit
OIPKIT=$ROOT/bin/oipkit

"$OIPKIT" serve --http "127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" --log-level warn &
SERVER_PID=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$HTTP_PORT/v2/health/ready" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$HTTP_PORT/v2/models/add_sub/ready" >/dev/null

# One request, three spellings.
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
BODY="{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1,16],\"datatype\":\"INT32\",\"data\":[$A]},{\"name\":\"INPUT1\",\"shape\":[1,16],\"datatype\":\"INT32\",\"data\":[$B]}]}"
cat >"$WORK/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$BODY'
EOF

# timed NAME CMD...: run CMD under GNU time; stdout to $WORK/NAME.out, CPU
# seconds (user+sys) to $WORK/NAME.cpu.
timed() {
	local name=$1
	shift
	echo "running $name: $*" >&2
	/usr/bin/time -f '%U %S' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" || {
		local rc=$?
		# oipkit exits 3/4 on thresholds/generator-bound; the numbers still count.
		[[ $name == oipkit* && $rc -ge 3 ]] || { cat "$WORK/$name.out" >&2; exit "$rc"; }
	}
	awk '{print $1 + $2}' "$WORK/$name.time" >"$WORK/$name.cpu"
}

timed ghz "$TOOLS/ghz" --insecure --proto specs/proto/inference.proto \
	--call inference.GRPCInferenceService.ModelInfer -D "$WORK/ghz.json" \
	-c "$CONCURRENCY" --connections 1 -z "${DURATION}s" --format json "127.0.0.1:$GRPC_PORT"
for p in grpc grpc-raw; do
	timed "oipkit-$p" "$OIPKIT" load --grpc "127.0.0.1:$GRPC_PORT" --protocol "$p" --model add_sub \
		--input-data "$WORK/input.json" --concurrency "$CONCURRENCY" --connections 1 \
		--duration "${DURATION}s" --progress never --format json
done
timed wrk wrk -t 2 -c "$CONCURRENCY" -d "${DURATION}s" --latency -s "$WORK/post.lua" \
	"http://127.0.0.1:$HTTP_PORT/v2/models/add_sub/infer"
timed oipkit-http "$OIPKIT" load --http "http://127.0.0.1:$HTTP_PORT" --protocol http --model add_sub \
	--input-data "$WORK/input.json" --concurrency "$CONCURRENCY" --connections "$CONCURRENCY" \
	--duration "${DURATION}s" --progress never --format json

ms() { awk -v ns="$1" 'BEGIN { printf "%.3f", ns / 1e6 }'; }
# wrk prints latencies as 1.23ms / 456.78us / 1.2s.
wrk_ms() { awk -v v="$1" 'BEGIN { u = v; sub(/[0-9.]+/, "", u); n = v + 0;
	if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.3f", n }'; }
row() { # row TOOL PROTOCOL REQUESTS RPS P50_MS P99_MS CPU_S
	awk -v t="$1" -v p="$2" -v n="$3" -v r="$4" -v a="$5" -v b="$6" -v c="$7" 'BEGIN {
		printf "| %s | %s | %d | %.0f | %s | %s | %.2f | %.3f |\n", t, p, n, r, a, b, c, (n > 0 ? 1000 * c / n : 0) }'
}

{
	echo "# oipkit load vs ghz and wrk"
	echo
	echo "add_sub (INT32 [1,16] ×2) on \`oipkit serve\`, loopback, closed loop at concurrency $CONCURRENCY for ${DURATION}s per tool, one connection for gRPC, $CONCURRENCY keep-alive connections for REST; $(nproc) cores shared by server and client; $(date -u +%Y-%m-%dT%H:%MZ); oipkit $("$OIPKIT" version | awk '{print $2}'), ghz $GHZ_VERSION, $(wrk -v 2>&1 | head -1 | awk '{print $1, $2}')."
	echo
	echo "| client | protocol | requests | throughput (req/s) | p50 (ms) | p99 (ms) | client CPU (s) | CPU s / 1000 req |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	g=$WORK/ghz.out
	row ghz "gRPC typed" "$(jq '.count' "$g")" "$(jq '.rps' "$g")" \
		"$(ms "$(jq '[.latencyDistribution[] | select(.percentage == 50)][0].latency' "$g")")" \
		"$(ms "$(jq '[.latencyDistribution[] | select(.percentage == 99)][0].latency' "$g")")" "$(cat "$WORK/ghz.cpu")"
	for p in grpc grpc-raw http; do
		o=$WORK/oipkit-$p.out
		label=$p
		[[ $p == grpc ]] && label="gRPC typed"
		[[ $p == grpc-raw ]] && label="gRPC raw"
		[[ $p == http ]] && label="REST JSON"
		row "oipkit load" "$label" "$(jq '.counts.completed' "$o")" "$(jq '.rates.completed' "$o")" \
			"$(ms "$(jq '.latency.response.p50Ns' "$o")")" "$(ms "$(jq '.latency.response.p99Ns' "$o")")" "$(cat "$WORK/oipkit-$p.cpu")"
		[[ $p == grpc-raw ]] && {
			w=$WORK/wrk.out
			reqs=$(awk '/requests in/ { print $1 }' "$w")
			row wrk "REST JSON" "$reqs" "$(awk '/^Requests\/sec/ { print $2 }' "$w")" \
				"$(wrk_ms "$(awk '$1 == "50%" { print $2 }' "$w")")" \
				"$(wrk_ms "$(awk '$1 == "99%" { print $2 }' "$w")")" "$(cat "$WORK/wrk.cpu")"
		}
	done
	echo
	ghz_err=$(jq '[.statusCodeDistribution // {} | to_entries[] | select(.key != "OK") | .value] | add // 0' "$WORK/ghz.out")
	wrk_err=$(awk '/Non-2xx|Socket errors/ { sub(/^ +/, ""); printf "%s; ", $0 }' "$WORK/wrk.out")
	oip_err=$(for p in grpc grpc-raw http; do jq '.counts.errors + .counts.timeouts' "$WORK/oipkit-$p.out"; done | awk '{ n += $1 } END { print n }')
	echo "Latency is each client's own measurement: oipkit's response time (in a closed loop, from the actual send), ghz's latency distribution, wrk's --latency distribution. Non-OK answers: ghz $ghz_err (calls cut off when its -z deadline ends count as errors), wrk ${wrk_err:-0}, oipkit $oip_err."
} >"$WORK/table.md"

mkdir -p "$(dirname "$OUT")"
cp "$WORK/table.md" "$OUT"
cat "$OUT"
