#!/usr/bin/env bash
# bench-stream.sh — the streaming rows of make bench-compare (issue 25 item
# 4): responses per second and client CPU per response of oipkit load
# --streaming on the reference's tokens fixture (INPUT0 = N responses per
# request, interval_ms 0, concurrency C, one gRPC connection), beside a bare
# grpc-go stream producing the same messages (bench/stream: the reference's
# responses to one such request recorded at start and answered, byte for
# byte, to every request):
#
#   bare grpc-go client → bare stream server    grpc-go's own floor per response
#   oipkit load         → bare stream server    the generator alone
#   oipkit load         → oipkit serve (tokens) generator and reference
#
# The first two alternate in each round and their ratio is per round; CPU is
# the client process's user+system time (GNU time) over the responses it
# read. Prints a markdown section on stdout (bench-compare.sh appends it to
# its report).
#
#   scripts/bench-stream.sh [SECONDS]   env: ROUNDS (5), STREAM_N (100),
#                                       STREAM_CONCURRENCY (4), STREAM_PORT_BASE (18760)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-${DURATION:-6}}
ROUNDS=${ROUNDS:-5}
N=${STREAM_N:-100}
C=${STREAM_CONCURRENCY:-4}
P=${STREAM_PORT_BASE:-18760}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh # after the cd to the repository root above
[[ -x /usr/bin/time ]] || scripts/apt-install.sh time
command -v jq >/dev/null || scripts/apt-install.sh jq
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/stream ./bench/stream

bin/oipkit serve --http "127.0.0.1:$P" --grpc "127.0.0.1:$((P + 1))" --log-level error &
PIDS+=($!)
for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$P/v2/health/ready" 2>/dev/null && break; sleep 0.1; done
bin/stream -record "127.0.0.1:$((P + 1))" -n "$N" -listen "127.0.0.1:$((P + 2))" >"$WORK/server.json" &
PIDS+=($!)
for _ in $(seq 100); do [[ -s $WORK/server.json ]] && break; sleep 0.1; done
R=$(jq .responses "$WORK/server.json")
echo "{\"data\":[{\"INPUT0\":{\"content\":[$N],\"shape\":[1]}}]}" >"$WORK/in.json"

# timed NAME CMD...: CMD's stdout to NAME.out, its CPU seconds to NAME.cpu.
timed() {
	local name=$1
	shift
	echo "running $name: $*" >&2
	/usr/bin/time -f '%U %S' -o "$WORK/$name.time" "$@" >"$WORK/$name.out"
	awk '{ print $1 + $2 }' "$WORK/$name.time" >"$WORK/$name.cpu"
}
load() { # load NAME PORT
	timed "$1" bin/oipkit load --grpc "127.0.0.1:$2" --model tokens --streaming --input-data "$WORK/in.json" \
		--param interval_ms=0 --concurrency "$C" --connections 1 --duration "${DURATION}s" --progress never --format json
	jq '.counts.responses' "$WORK/$1.out" >"$WORK/$1.n"
	jq '.rates.responses' "$WORK/$1.out" >"$WORK/$1.rps"
	jq '.counts.errors + .counts.timeouts' "$WORK/$1.out" >"$WORK/$1.err"
}
for r in $(seq "$ROUNDS"); do
	timed "bare.r$r" bin/stream -grpc "127.0.0.1:$((P + 2))" -n "$N" -responses "$R" -c "$C" -d "${DURATION}s"
	jq '.responses' "$WORK/bare.r$r.out" >"$WORK/bare.r$r.n"
	jq '.responses_per_s' "$WORK/bare.r$r.out" >"$WORK/bare.r$r.rps"
	echo 0 >"$WORK/bare.r$r.err"
	load "gen-bare.r$r" $((P + 2))
	load "gen-ref.r$r" $((P + 1))
done

f() { cat "$WORK/$1.$2"; }
us() { awk -v c="$(f "$1" cpu)" -v n="$(f "$1" n)" 'BEGIN { printf "%.2f", (n > 0 ? 1e6 * c / n : 0) }'; }
# med NAME: the round with the median responses/s.
med() { for r in $(seq "$ROUNDS"); do echo "$(f "$1.r$r" rps) $r"; done | sort -g | awk '{ a[NR] = $2 } END { print a[int((NR + 1) / 2)] }'; }
# ratios A B METRIC: B/A of each round, and their median.
ratios() {
	local all
	all=$(for r in $(seq "$ROUNDS"); do
		if [[ $3 == rps ]]; then a=$(f "$1.r$r" rps) b=$(f "$2.r$r" rps); else a=$(us "$1.r$r") b=$(us "$2.r$r"); fi
		awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f\n", (a > 0 ? b / a : 0) }'
	done)
	printf '%s× | %s' "$(sort -g <<<"$all" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" "$(tr '\n' ' ' <<<"$all")"
}
row() { # row NAME CLIENT SERVER
	local m
	m=$(med "$1")
	printf '| %s | %s | %.0f | %s | %s | %s | %s |\n' "$2" "$3" "$(f "$1.r$m" rps)" \
		"$(for r in $(seq "$ROUNDS"); do printf '%.0f ' "$(f "$1.r$r" rps)"; done)" "$(f "$1.r$m" n)" "$(us "$1.r$m")" "$(f "$1.r$m" err)"
}
echo "## Streaming: the tokens fixture over gRPC ModelStreamInfer"
echo
echo "Written by scripts/bench-stream.sh on $(date -u +%Y-%m-%dT%H:%MZ): tokens with INPUT0 = $N ($R messages per request, $(jq .bytes "$WORK/server.json") bytes in all), interval_ms 0, closed loop at concurrency $C on one gRPC connection, ${DURATION}s per run, $ROUNDS round(s); each row is its median round. The bare server is bench/stream: grpc-go answering every request with the reference's own messages to it, recorded at start. CPU is the client process's user+system time over the responses it read. The issue sets no target for these rows: they say where the generator stands against grpc-go alone."
echo
echo "| ratio | median | each round |"
echo "|---|---:|---|"
echo "| oipkit load / bare grpc-go client, responses/s (both against the bare server) | $(ratios bare gen-bare rps) |"
echo "| oipkit load / bare grpc-go client, client CPU per response | $(ratios bare gen-bare cpu) |"
echo "| reference tokens / bare stream server, responses/s (oipkit load driving both) | $(ratios gen-bare gen-ref rps) |"
echo
echo "| client | server | responses/s | every round | responses | client CPU µs / response | failed requests |"
echo "|---|---|---:|---|---:|---:|---:|"
row bare "bench/stream (bare grpc-go)" "bench/stream"
row gen-bare "oipkit load --streaming" "bench/stream"
row gen-ref "oipkit load --streaming" "oipkit serve, tokens"
