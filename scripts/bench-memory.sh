#!/usr/bin/env bash
# bench-memory.sh — the memory rows of make bench-compare (issue 25 item 3),
# each beside an anchor measured in the same run, alternating, per round:
#
#   generator RSS with 1,000 and 10,000 requests in flight against the
#   reference's delay fixture (delay_ms DELAY_MS, so every request waits):
#   oipkit load --protocol http with as many keep-alive connections beside wrk
#   -c at the same count; oipkit load --protocol grpc on one connection beside
#   ghz -c at the same concurrency (--connections 1). RSS is the client
#   process's peak (GNU time %M). A/B: the REST run again with
#   OIPKIT_EVENT_LOOP=off (a goroutine per connection).
#
#   reference server RSS with 10,000 idle keep-alive connections (bench/idle:
#   one add_sub inference each, then idle) beside bench/bare's bare
#   net/http server holding the same; each server fresh for each measurement,
#   VmRSS read from /proc while the connections are held.
#
# Prints a markdown section on stdout (bench-compare.sh appends it).
#
#   scripts/bench-memory.sh [SECONDS]   env: ROUNDS (5), INFLIGHT ("1000 10000"),
#                                       DELAY_MS (2000), IDLE (10000), MEMORY_PORT_BASE (18770)
# Loopback only; every run is bounded by SECONDS (the idle hold by 3 s).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-${DURATION:-8}}
ROUNDS=${ROUNDS:-5}
INFLIGHT=${INFLIGHT:-1000 10000}
DELAY_MS=${DELAY_MS:-2000}
IDLE=${IDLE:-10000}
P=${MEMORY_PORT_BASE:-18770}
GHZ=$PWD/.tools/bin/ghz
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh # after the cd to the repository root above
# Each client and server holds one descriptor per connection.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[[ -x /usr/bin/time ]] || scripts/apt-install.sh time
command -v wrk >/dev/null || scripts/apt-install.sh wrk
command -v jq >/dev/null || scripts/apt-install.sh jq
[[ -x $GHZ ]] || GOBIN=$PWD/.tools/bin go install github.com/bojand/ghz/cmd/ghz@v0.121.0
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/bare ./bench/bare
go build -o bin/idle ./bench/idle

wait_http() {
	for _ in $(seq 100); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "no answer from $1" >&2
	exit 1
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

BODY="{\"parameters\":{\"delay_ms\":$DELAY_MS},\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1.5]}]}"
printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$BODY'" >"$WORK/delay.lua"
printf '{"model_name": "delay", "parameters": {"delay_ms": {"int64_param": "%s"}}, "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1], "contents": {"fp32_contents": [1.5]}}]}\n' \
	"$DELAY_MS" >"$WORK/ghz.json"
printf '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[%s]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[%s]}]}' \
	"$(seq -s, 1 16)" "$(seq -s, 101 116)" >"$WORK/add_sub.json"

# timed NAME CMD...: stdout to NAME.out; peak RSS (KiB) to NAME.rss.
timed() {
	local name=$1
	shift
	echo "running $name: $*" >&2
	/usr/bin/time -f '%M' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" || {
		local rc=$?
		# oipkit exits 3/4 on failed requests/generator-bound: the RSS counts.
		[[ $name == oipkit* && $rc -ge 3 ]] || { tail -5 "$WORK/$name.out" >&2; exit "$rc"; }
	}
	tail -1 "$WORK/$name.time" >"$WORK/$name.rss"
}

# idle NAME CMD...: start server CMD on 127.0.0.1:$((P + 2)), hold IDLE
# connections to it, record its VmRSS with them (NAME.rss) and before
# (NAME.base), stop it.
idle() {
	local name=$1 pid ip
	shift
	"$@" &
	pid=$!
	PIDS+=("$pid")
	wait_http "http://127.0.0.1:$((P + 2))/v2/health/ready"
	rss_kib "$pid" >"$WORK/$name.base"
	echo "running $name: $IDLE idle connections" >&2
	bin/idle -addr "127.0.0.1:$((P + 2))" -path /v2/models/add_sub/infer -post "$WORK/add_sub.json" \
		-n "$IDLE" -hold 3s >"$WORK/$name.idle" &
	ip=$!
	for _ in $(seq 600); do
		[[ -s $WORK/$name.idle ]] && break
		kill -0 "$ip" 2>/dev/null || break
		sleep 0.1
	done
	[[ -s $WORK/$name.idle ]] || { echo "bench/idle did not hold $IDLE connections" >&2; exit 1; }
	sleep 1 # the server settles with the connections open
	rss_kib "$pid" >"$WORK/$name.rss"
	wait "$ip"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
	idle "idle-bare.r$r" bin/bare --request "$WORK/add_sub.json" --http "127.0.0.1:$((P + 2))" --grpc ""
	idle "idle-ref.r$r" bin/oipkit serve --http "127.0.0.1:$((P + 2))" --grpc "" --log-level error
done

bin/oipkit serve --http "127.0.0.1:$P" --grpc "127.0.0.1:$((P + 1))" --log-level error &
PIDS+=($!)
wait_http "http://127.0.0.1:$P/v2/models/delay/ready"
# baseline NAME CMD...: one request in flight; NAME.file and NAME.anon are
# the file-backed and anonymous RSS (KiB) read from /proc halfway through the
# run: what the process costs before any connection count (its own binary's
# pages, its runtime, its fixed buffers).
baseline() {
	local name=$1 pid
	shift
	echo "running $name: $*" >&2
	"$@" >/dev/null 2>&1 &
	pid=$!
	sleep "$((DURATION / 2))"
	awk '/^RssFile:/ { print $2 }' "/proc/$pid/status" >"$WORK/$name.file"
	awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" >"$WORK/$name.anon"
	wait "$pid" || true
}

for r in $(seq "$ROUNDS"); do
	baseline "wrk-1.r$r" wrk -t 1 -c 1 -d "${DURATION}s" --timeout 60s -s "$WORK/delay.lua" \
		"http://127.0.0.1:$P/v2/models/delay/infer"
	baseline "oipkit-http-1.r$r" bin/oipkit load --http "http://127.0.0.1:$P" --protocol http --model delay \
		--param "delay_ms=$DELAY_MS" --concurrency 1 --connections 1 --duration "${DURATION}s" \
		--timeout 60s --progress never --format json
	for n in $INFLIGHT; do
		timed "wrk-$n.r$r" wrk -t 2 -c "$n" -d "${DURATION}s" --timeout 60s -s "$WORK/delay.lua" \
			"http://127.0.0.1:$P/v2/models/delay/infer"
		timed "oipkit-http-$n.r$r" bin/oipkit load --http "http://127.0.0.1:$P" --protocol http --model delay \
			--param "delay_ms=$DELAY_MS" --concurrency "$n" --connections "$n" --duration "${DURATION}s" \
			--timeout 60s --progress never --format json
		# A/B: a goroutine per connection instead of the event loop.
		OIPKIT_EVENT_LOOP=off timed "oipkit-http-noloop-$n.r$r" bin/oipkit load --http "http://127.0.0.1:$P" \
			--protocol http --model delay --param "delay_ms=$DELAY_MS" --concurrency "$n" --connections "$n" \
			--duration "${DURATION}s" --timeout 60s --progress never --format json
		timed "ghz-$n.r$r" "$GHZ" --insecure --proto specs/proto/inference.proto \
			--call inference.GRPCInferenceService.ModelInfer -D "$WORK/ghz.json" \
			-c "$n" --connections 1 -z "${DURATION}s" --format json "127.0.0.1:$((P + 1))"
		timed "oipkit-grpc-$n.r$r" bin/oipkit load --grpc "127.0.0.1:$((P + 1))" --protocol grpc --model delay \
			--param "delay_ms=$DELAY_MS" --concurrency "$n" --connections 1 --duration "${DURATION}s" \
			--timeout 60s --progress never --format json
	done
done

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# paired WHAT ANCHOR-LABEL ANCHOR OURS GOAL: OURS/ANCHOR RSS of each round,
# the round with the median ratio.
paired() {
	local all med ok
	all=$(for r in $(seq "$ROUNDS"); do
		awk -v a="$(cat "$WORK/$3.r$r.rss")" -v b="$(cat "$WORK/$4.r$r.rss")" \
			'BEGIN { printf "%.2f %.1f %.1f\n", (a > 0 ? b / a : 0), a / 1024, b / 1024 }'
	done | sort -g)
	med=$(awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)' <<<"$all")
	ok=$(awk -v r="${med%% *}" -v g="${5#<=}" 'BEGIN { print ((r + 0 <= g + 0) ? "met" : "**not met**") }')
	local goal="≤ ${5#<=}"
	[[ -n $5 ]] || { goal="(A/B)"; ok=""; } # an A/B row: what a layer buys, no target
	printf '| %s | %s | %s | %s | %s× | %s | %s | %s |\n' "$1" "$2" "$(awk '{ print $2 }' <<<"$med")" \
		"$(awk '{ print $3 }' <<<"$med")" "${med%% *}" "$goal" "$ok" "$(awk '{ printf "%s ", $1 }' <<<"$all")"
}
done_count() { # requests completed in one load run
	case $1 in
	wrk*) awk '/requests in/ { print $1 }' "$WORK/$1.out" ;;
	ghz*) jq '.count' "$WORK/$1.out" ;;
	*) jq '.counts.completed' "$WORK/$1.out" ;;
	esac
}
echo "## Memory: generator RSS with requests in flight, reference RSS with idle connections"
echo
echo "Written by scripts/bench-memory.sh on $(date -u +%Y-%m-%dT%H:%MZ), $ROUNDS round(s): each ratio per round, the row the round with the median ratio. Load runs: the reference's delay fixture with delay_ms $DELAY_MS (every request waits, so the closed loop keeps its whole concurrency in flight), ${DURATION}s per run; RSS is the client's peak (GNU time). Idle rows: $IDLE keep-alive connections, each answered one add_sub inference (REST JSON), held 3 s; VmRSS of a fresh server while they are held; bench/bare runs at GOGC ${GOGC:-100}, oipkit serve at its own (--gc-percent)."
echo
echo "| target | anchor | anchor RSS (MiB) | oipkit RSS (MiB) | ratio | goal | | ratio of each round |"
echo "|---|---|---:|---:|---:|---|---|---|"
for n in $INFLIGHT; do
	paired "generator RSS, REST JSON, $n in flight ($n connections)" "wrk -c $n" "wrk-$n" "oipkit-http-$n" "<=1.5"
	paired "what the event loop buys (no goroutine per connection), REST JSON, $n in flight" "OIPKIT_EVENT_LOOP=off" \
		"oipkit-http-noloop-$n" "oipkit-http-$n" ""
	paired "generator RSS, gRPC, $n in flight (1 connection)" "ghz -c $n" "ghz-$n" "oipkit-grpc-$n" "<=0.5"
done
paired "reference server RSS, $IDLE idle keep-alive connections" "bare net/http" idle-bare idle-ref "<=1.5"
echo
# What each in-flight request costs, apart from what the process costs at
# all: the slope between the two counts, per round, median round.
read -r lo hi <<<"$(tr ' ' '\n' <<<"$INFLIGHT" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }')"
slope() { # LABEL ANCHOR-PREFIX OURS-PREFIX: KiB per request between lo and hi in flight
	local all med
	all=$(for r in $(seq "$ROUNDS"); do
		awk -v a1="$(cat "$WORK/$2-$lo.r$r.rss")" -v a2="$(cat "$WORK/$2-$hi.r$r.rss")" \
			-v b1="$(cat "$WORK/$3-$lo.r$r.rss")" -v b2="$(cat "$WORK/$3-$hi.r$r.rss")" -v n="$((hi - lo))" \
			'BEGIN { a = (a2 - a1) / n; b = (b2 - b1) / n; printf "%.2f %.1f %.1f\n", (a > 0 ? b / a : 0), a, b }'
	done | sort -g)
	med=$(awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)' <<<"$all")
	printf '| %s | %s | %s | %s× | %s |\n' "$1" "$(awk '{ print $2 }' <<<"$med")" "$(awk '{ print $3 }' <<<"$med")" \
		"${med%% *}" "$(awk '{ printf "%s ", $1 }' <<<"$all")"
}
if [[ $lo != "$hi" ]]; then
	echo "What a request in flight costs and what the process costs at all: the RSS slope between $lo and $hi in flight (KiB per request; no target: the targets above are on totals), and the RSS of a run with one request in flight, read from /proc halfway through it, split into the pages of the program's files (its binary and libraries) and anonymous memory (heap, stacks, buffers)."
	echo
	echo "| per request in flight | anchor KiB | oipkit KiB | ratio | ratio of each round |"
	echo "|---|---:|---:|---:|---|"
	slope "REST JSON: oipkit load beside wrk" wrk oipkit-http
	slope "gRPC: oipkit load beside ghz" ghz oipkit-grpc
	echo
fi
echo "| one request in flight | file-backed RSS (MiB), each round | anonymous RSS (MiB), each round |"
echo "|---|---|---|"
for name in wrk-1 oipkit-http-1; do
	printf '| %s | %s | %s |\n' "$name" "$(for r in $(seq "$ROUNDS"); do printf '%s ' "$(mib "$(cat "$WORK/$name.r$r.file")")"; done)" \
		"$(for r in $(seq "$ROUNDS"); do printf '%s ' "$(mib "$(cat "$WORK/$name.r$r.anon")")"; done)"
done
echo
echo "| run | requests completed, each round | peak RSS (MiB), each round |"
echo "|---|---|---|"
for n in $INFLIGHT; do
	for name in "wrk-$n" "oipkit-http-$n" "oipkit-http-noloop-$n" "ghz-$n" "oipkit-grpc-$n"; do
		printf '| %s | %s | %s |\n' "$name" "$(for r in $(seq "$ROUNDS"); do printf '%s ' "$(done_count "$name.r$r")"; done)" \
			"$(for r in $(seq "$ROUNDS"); do printf '%s ' "$(mib "$(cat "$WORK/$name.r$r.rss")")"; done)"
	done
done
for name in idle-bare idle-ref; do
	printf '| %s: server VmRSS before → with %s idle | | %s |\n' "$name" "$IDLE" \
		"$(for r in $(seq "$ROUNDS"); do printf '%s→%s ' "$(mib "$(cat "$WORK/$name.r$r.base")")" "$(mib "$(cat "$WORK/$name.r$r.rss")")"; done)"
done
