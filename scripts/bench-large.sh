#!/usr/bin/env bash
# bench-large.sh — the large-tensor rows of `make bench-compare` (issue 25):
# oipkit load and `oipkit serve` moving the tensors users send, beside the
# limits under them, measured in the same run. Prints a markdown section on
# stdout (bench-compare.sh appends it to reports/bench-compare.md).
#
#   scripts/bench-large.sh      (env below; LARGE=0 in bench-compare.sh skips it)
#
# Cases: identity_fp32 at 1 MiB (INPUT0 [1,262144]) and 16 MiB ([1,4194304]),
# identity_bytes with 1,000 elements of 1 KiB ([1,1000]). Each over gRPC raw,
# REST binary and REST JSON, closed loop at concurrency 4 (one gRPC
# connection, 4 REST keep-alive connections), oipkit load with its default
# sampled answer checks.
#
# Anchors (bench/echo, see its doc.go), each run next to the runs it anchors
# in every round, so that each round gives a ratio and the row shows their
# median:
#   tcp echo      4 clients, one connection each, 4-byte length + the request's
#                 bytes, one copy on the server: the loopback limit;
#   grpc echo     grpc-go client and server (separate processes), pass-through
#                 codec: grpc-go's own ceiling for the same bytes;
#   canned        a server answering pre-built bytes (net/http; a hand-written
#                 h2c responder, not grpc-go): the generator alone, --check-every 0;
#   json          encoding/json encode+decode of the same tensor
#                 (BenchmarkJSONRoundTrip), beside REST JSON;
#   perf_analyzer on the same model and shape against the reference and the
#                 canned server (PERF_ANALYZER=0 skips);
#   Triton        standalone Triton 2.51's identity_fp32 (python backend) from
#                 .venv-interop/pytriton when installed (TRITON=0 skips).
# A/B rows, each hand-written layer beside itself switched off, paired the
# same way: a second reference server with OIPKIT_REST_VIEWS=off and
# OIPKIT_GRPC_VIEWS=off, and the generator with OIPKIT_H2C_DIRECT=off.
#
# Env: LARGE_DURATION (5 s per run), ROUNDS (3), PORT_BASE (18700: uses
# +30..+39), PERF_ANALYZER (1), TRITON (1), LARGE_CASES (fp32_1m fp32_16m
# bytes_1k).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DURATION=${LARGE_DURATION:-5}
ROUNDS=${ROUNDS:-3}
PORT_BASE=${PORT_BASE:-18700}
PERF_ANALYZER=${PERF_ANALYZER:-1}
TRITON=${TRITON:-1}
CASES=${LARGE_CASES:-fp32_1m fp32_16m bytes_1k}
CONC=4
REF_HTTP=$((PORT_BASE + 30)) REF_GRPC=$((PORT_BASE + 31))
ECHO_TCP=$((PORT_BASE + 32)) ECHO_GRPC=$((PORT_BASE + 33))
CAN_HTTP=$((PORT_BASE + 34)) CAN_GRPC=$((PORT_BASE + 35))
TRI_HTTP=$((PORT_BASE + 36)) TRI_GRPC=$((PORT_BASE + 37))
OFF_HTTP=$((PORT_BASE + 38)) OFF_GRPC=$((PORT_BASE + 39))
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh # after the cd to the repository root above
command -v jq >/dev/null || scripts/apt-install.sh jq

echo "bench-large: building oipkit and bench/echo" >&2
go build -o bin/oipkit ./cmd/oipkit
go build -o bin/echo ./bench/echo
OIPKIT=$ROOT/bin/oipkit
ECHO=$ROOT/bin/echo

wait_http() { # wait_http URL [TRIES]
	for _ in $(seq "${2:-100}"); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
"$OIPKIT" serve --http "127.0.0.1:$REF_HTTP" --grpc "127.0.0.1:$REF_GRPC" --log-level error &
PIDS+=($!)
# A/B: the same server with its request views switched off (REST binary
# inputs decoded into copies, answers assembled and copied before the write;
# identity_bytes over gRPC copied and encoded anew).
OIPKIT_REST_VIEWS=off OIPKIT_GRPC_VIEWS=off "$OIPKIT" serve --http "127.0.0.1:$OFF_HTTP" --grpc "127.0.0.1:$OFF_GRPC" --log-level error &
PIDS+=($!)
"$ECHO" -listen-tcp "127.0.0.1:$ECHO_TCP" -listen-grpc "127.0.0.1:$ECHO_GRPC" &
PIDS+=($!)
wait_http "http://127.0.0.1:$REF_HTTP/v2/health/ready" || { echo "bench-large: the reference server did not start" >&2; exit 1; }
wait_http "http://127.0.0.1:$OFF_HTTP/v2/health/ready" || { echo "bench-large: the reference server (views off) did not start" >&2; exit 1; }

triton_note="not run (TRITON=0)"
triton_up=0
if [[ $TRITON != 0 ]]; then
	if [[ -x .venv-interop/pytriton/bin/python ]]; then
		echo "bench-large: starting standalone Triton (interop/triton/start.sh)" >&2
		# Without never_ready, which keeps Triton's server readiness at 400
		# (oipkit load waits for a ready server).
		DEPLOY_NEVER_READY=0 interop/triton/start.sh "$TRI_HTTP" "$TRI_GRPC" >"$WORK/triton.log" 2>&1 &
		PIDS+=($!)
		if wait_http "http://127.0.0.1:$TRI_HTTP/v2/models/identity_fp32/ready" 1200; then
			triton_up=1
			triton_note="standalone Triton 2.51 (the nvidia-pytriton wheel's tritonserver, python backend), interop/triton/start.sh"
		else
			triton_note="not run: Triton did not become ready in 120 s ($(tail -1 "$WORK/triton.log"))"
		fi
	else
		triton_note="not run: .venv-interop/pytriton is not installed (make interop installs it)"
	fi
	echo "bench-large: Triton: $triton_note" >&2
fi

# The BYTES case's request: 1,000 elements of 1 KiB, as an input-data file.
python3 - "$WORK/bytes_1k.json" <<'EOF'
import json, sys
els = [("%04d" % i) * 256 for i in range(1000)]
json.dump({"data": [{"INPUT0": {"content": els, "shape": [1, 1000]}}]}, open(sys.argv[1], "w"))
EOF

# case_def CASE: MODEL SHAPE MESSAGE-BYTES LABEL
case_def() {
	case $1 in
	fp32_1m) echo "identity_fp32 1,262144 1048576 FP32_[1,262144]_(1_MiB)" ;;
	fp32_16m) echo "identity_fp32 1,4194304 16777216 FP32_[1,4194304]_(16_MiB)" ;;
	bytes_1k) echo "identity_bytes 1,1000 1028000 BYTES_[1,1000]_of_1_KiB_(1,028,000_bytes_with_length_prefixes)" ;;
	esac
}
data_flags() { # data_flags CASE SHAPE
	if [[ $1 == bytes_1k ]]; then echo "--input-data $WORK/bytes_1k.json"; else echo "--shape INPUT0:$2"; fi
}

# load NAME TARGET-FLAGS PROTOCOL [FLAGS...]: one oipkit load run; its
# throughput to $WORK/NAME.
load() {
	local name=$1 target=$2 proto=$3
	shift 3
	echo "bench-large: $name" >&2
	# shellcheck disable=SC2086 # target and data flags are words
	"$OIPKIT" load $target --protocol "$proto" --model "$MODEL" $(data_flags "$CASE" "$SHAPE") \
		--concurrency "$CONC" --connections "$([[ $proto == grpc* ]] && echo 1 || echo "$CONC")" \
		--duration "${DURATION}s" --progress never --format json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" || true
	local rps err
	rps=$(jq '.rates.completed // 0' "$WORK/$name.json" 2>/dev/null || true)
	echo "${rps:-0}" >"$WORK/$name"
	err=$(jq '.counts.errors + .counts.timeouts' "$WORK/$name.json" 2>/dev/null || true)
	if [[ -z $rps ]]; then # no result at all: say why
		echo "$name: no result ($(tail -1 "$WORK/$name.err"))" >>"$WORK/$CASE.notes"
	elif [[ $err != 0 ]]; then
		echo "$name: $err failed" >>"$WORK/$CASE.notes"
	fi
}
echo_run() { # echo_run NAME MODE ADDR
	echo "bench-large: $1" >&2
	"$ECHO" "-$2" "$3" -size "$BYTES" -c "$CONC" -d "${DURATION}s" >"$WORK/$1.json" || echo '{"rps":0}' >"$WORK/$1.json"
	jq '.rps' "$WORK/$1.json" >"$WORK/$1"
}
pa_run() { # pa_run NAME PROTOCOL PORT: perf_analyzer's throughput, or 0
	echo "bench-large: $1 (perf_analyzer)" >&2
	local data=(--shape "INPUT0:$SHAPE")
	if [[ $CASE == bytes_1k ]]; then
		cp "$WORK/bytes_1k.json" .venv-interop/trixie/tmp/oipkit-bytes_1k.json
		data=(--input-data /tmp/oipkit-bytes_1k.json)
	fi
	# Bounded: perf_analyzer keeps several MB per 1 MiB request for the whole
	# run (measured: 6.4 GB RSS after ~2,500 requests to the reference, 11.7 GB
	# and std::bad_alloc against the faster canned server in 2 s time
	# windows), so its windows are counted in requests (100 each, at most 8),
	# not timed; glibc's per-thread malloc arenas (MALLOC_ARENA_MAX=2) made
	# the 12 GB address-space bound abort it before its memory was used; 90 s;
	# a looser stability check on a busy machine. -v prints every window, so
	# a run with no stable window still gives a figure, marked as such.
	(export MALLOC_ARENA_MAX=2; ulimit -v 12000000; timeout 90 interop/perf_analyzer.sh -v -m "$MODEL" -u "127.0.0.1:$3" -i "$2" "${data[@]}" \
		--concurrency-range "$CONC" --measurement-mode count_windows --measurement-request-count 100 \
		--max-trials 8 --stability-percentage 30) >"$WORK/$1.log" 2>&1 || true
	awk '/Throughput:/ { print $2; f = 1; exit } END { if (!f) print 0 }' "$WORK/$1.log" >"$WORK/$1"
	: >"$WORK/$1.why"
	if [[ $(cat "$WORK/$1") == 0 ]]; then
		local passes
		passes=$(awk '/Pass \[[0-9]+\] throughput:/ { print $4 }' "$WORK/$1.log" | sort -g)
		if [[ -n $passes ]]; then
			awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' <<<"$passes" >"$WORK/$1"
			echo "no stable window: median of its $(wc -l <<<"$passes") windows" >"$WORK/$1.why"
		else
			echo "perf_analyzer gave no figure: $(grep -m1 -iE 'error|what\(\)|failed' "$WORK/$1.log" || tail -1 "$WORK/$1.log")" >"$WORK/$1.why"
		fi
	fi
}

pa_ok=0
pa_note="not run (PERF_ANALYZER=0)"
if [[ $PERF_ANALYZER != 0 ]]; then
	if interop/setup-perf-analyzer.sh >"$WORK/pa-setup.log" 2>&1; then
		pa_ok=1
		pa_note="perf_analyzer 2.60.0 (interop/perf_analyzer.sh), concurrency 4, windows of 100 requests, stability 30%, at most 8 windows, after the rounds (a row without a stable window or a figure says so)"
	else
		pa_note="not run: interop/setup-perf-analyzer.sh failed ($(tail -1 "$WORK/pa-setup.log"))"
	fi
fi

for CASE in $CASES; do
	read -r MODEL SHAPE BYTES LABEL < <(case_def "$CASE")
	: >"$WORK/$CASE.notes"
	canned=0
	if [[ $MODEL == identity_fp32 ]]; then
		"$ECHO" -canned-http "127.0.0.1:$CAN_HTTP" -canned-grpc "127.0.0.1:$CAN_GRPC" -model "$MODEL" -shape "$SHAPE" &
		cpid=$!
		PIDS+=($cpid)
		wait_http "http://127.0.0.1:$CAN_HTTP/v2/health/ready" && canned=1
	fi
	for r in $(seq "$ROUNDS"); do
		echo_run "$CASE.tcp.r$r" tcp "127.0.0.1:$ECHO_TCP"
		load "$CASE.grpc.r$r" "--grpc 127.0.0.1:$REF_GRPC" grpc-raw
		echo_run "$CASE.grpcecho.r$r" grpc "127.0.0.1:$ECHO_GRPC"
		load "$CASE.binary.r$r" "--http http://127.0.0.1:$REF_HTTP" http-binary
		if [[ $MODEL == identity_fp32 ]]; then
			load "$CASE.binaryoff.r$r" "--http http://127.0.0.1:$OFF_HTTP" http-binary
		else
			load "$CASE.grpcoff.r$r" "--grpc 127.0.0.1:$OFF_GRPC" grpc-raw
		fi
		load "$CASE.json.r$r" "--http http://127.0.0.1:$REF_HTTP" http
		if ((canned)); then
			load "$CASE.cbinary.r$r" "--http http://127.0.0.1:$CAN_HTTP" http-binary --check-every 0
			load "$CASE.cgrpc.r$r" "--grpc 127.0.0.1:$CAN_GRPC" grpc-raw --check-every 0
			OIPKIT_H2C_DIRECT=off load "$CASE.cgrpcoff.r$r" "--grpc 127.0.0.1:$CAN_GRPC" grpc-raw --check-every 0
		fi
		if ((triton_up)) && [[ $MODEL == identity_fp32 ]]; then
			load "$CASE.tgrpc.r$r" "--grpc 127.0.0.1:$TRI_GRPC" grpc-raw
			load "$CASE.grpc2.r$r" "--grpc 127.0.0.1:$REF_GRPC" grpc-raw
		fi
	done
	if ((pa_ok)) && [[ $CASE != fp32_16m || ${LARGE_PA_16M:-0} != 0 ]]; then
		pa_run "$CASE.pagrpc" grpc "$REF_GRPC"
		pa_run "$CASE.pahttp" http "$REF_HTTP"
		if ((canned)); then
			pa_run "$CASE.pacgrpc" grpc "$CAN_GRPC"
			pa_run "$CASE.pachttp" http "$CAN_HTTP"
		fi
	fi
	if ((canned)); then
		kill "$cpid" 2>/dev/null || true
		wait "$cpid" 2>/dev/null || true
	fi
done

echo "bench-large: encoding/json round trip benchmark" >&2
go test -run '^$' -bench JSONRoundTrip -benchtime 3x -count 3 ./bench/echo/ >"$WORK/json.txt"

# json_rps SIZE: encoding/json round trips per second (median of the runs).
json_rps() {
	awk -v s="fp32_$1" '$1 ~ "JSONRoundTrip/" s { print 1e9 / $3 }' "$WORK/json.txt" | sort -g |
		awk '{ a[NR] = $1 } END { printf "%.1f", (NR ? a[int((NR + 1) / 2)] : 0) }'
}
# paired WHAT ANCHOR A B GOAL: per-round ratios of $WORK/B.rN over
# $WORK/A.rN, and the median round's figures.
paired() {
	local rounds med
	rounds=$(for r in $(seq "$ROUNDS"); do echo "$(cat "$WORK/$3.r$r") $(cat "$WORK/$4.r$r")"; done |
		awk '{ printf "%s %s %s\n", (($1 > 0) ? $2 / $1 : 0), $1, $2 }' | sort -g)
	med=$(awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)' <<<"$rounds")
	row "$1" "$2" "$(awk '{ print $2 }' <<<"$med")" "$(awk '{ print $3 }' <<<"$med")" "$5" "$(awk '{ printf "%.2f ", $1 }' <<<"$rounds")"
}
# median NAME: the median round of $WORK/NAME.rN.
median() { for r in $(seq "$ROUNDS"); do cat "$WORK/$1.r$r"; done | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# row WHAT ANCHOR ANCHOR_RPS OIPKIT_RPS GOAL [ROUND RATIOS]
row() {
	local r ok
	r=$(awk -v a="$4" -v b="$3" 'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else printf "n/a" }')
	ok=$(awk -v r="$r" -v g="$5" 'BEGIN { x = substr(g, 3) + 0; if (r == "n/a" || g == "") print "–"; else if (r >= x) print "met"; else print "**not met**" }')
	printf '| %s | %s | %.1f | %.1f | %s× | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$r" "${5/>=/≥ }" "$ok" "${6:-}"
}
single() { [[ -f $WORK/$1 ]] && cat "$WORK/$1" || echo 0; }

echo "## Large tensors (issue 25)"
echo
echo "Written by scripts/bench-large.sh on $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) cores shared by servers and clients (and, on a shared machine, other work), loopback, closed loop at **concurrency 4** for ${DURATION}s per run, $ROUNDS round(s); one gRPC connection, 4 REST keep-alive connections. Each row's anchor runs next to it in every round; the ratio column is the median round's, then every round's ratio. Figures are requests per second. oipkit load checks answers at its default sampling, except against the canned server (--check-every 0: its answers are zeros). Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Triton: $triton_note. perf_analyzer: $pa_note."
for CASE in $CASES; do
	read -r MODEL SHAPE BYTES LABEL < <(case_def "$CASE")
	echo
	echo "### ${MODEL} ${LABEL//_/ }"
	echo
	echo "| target | anchor | anchor req/s | oipkit req/s | ratio | goal | | ratio of each round |"
	echo "|---|---|---:|---:|---:|---|---|---|"
	paired "REST binary, generator + reference" "TCP echo (1 copy)" "$CASE.tcp" "$CASE.binary" ">=0.8"
	paired "gRPC raw, generator + reference" "TCP echo (1 copy)" "$CASE.tcp" "$CASE.grpc" ">=0.5"
	paired "gRPC raw, generator + reference" "grpc-go echo" "$CASE.grpcecho" "$CASE.grpc" ""
	[[ -f $WORK/$CASE.tgrpc.r1 ]] && paired "gRPC raw, generator + reference" "generator + standalone Triton" "$CASE.tgrpc" "$CASE.grpc2" ">=1.0"
	if [[ $MODEL == identity_fp32 ]]; then
		size=$([[ $CASE == fp32_1m ]] && echo 1MiB || echo 16MiB)
		row "REST JSON, generator + reference" "encoding/json encode+decode of the tensor" "$(json_rps "$size")" "$(median "$CASE.json")" ">=4"
	else
		row "REST JSON, generator + reference" "(no encoding/json anchor for BYTES)" 0 "$(median "$CASE.json")" ""
	fi
	if [[ -f $WORK/$CASE.cbinary.r1 ]]; then
		paired "REST binary, generator alone (canned server)" "TCP echo (1 copy)" "$CASE.tcp" "$CASE.cbinary" ">=0.9"
		paired "gRPC raw, generator alone (canned server)" "TCP echo (1 copy)" "$CASE.tcp" "$CASE.cgrpc" ">=0.7"
	fi
	[[ -f $WORK/$CASE.binaryoff.r1 ]] &&
		paired "what the server's request views and writev buy, REST binary, generator + reference" "OIPKIT_REST_VIEWS=off" "$CASE.binaryoff" "$CASE.binary" ""
	[[ -f $WORK/$CASE.grpcoff.r1 ]] &&
		paired "what the server's gRPC views buy, gRPC raw, generator + reference" "OIPKIT_GRPC_VIEWS=off" "$CASE.grpcoff" "$CASE.grpc" ""
	[[ -f $WORK/$CASE.cgrpcoff.r1 ]] &&
		paired "what the lean gRPC client's direct DATA reads and writev buy, generator alone (canned server)" "OIPKIT_H2C_DIRECT=off" "$CASE.cgrpcoff" "$CASE.cgrpc" ""
	if [[ -f $WORK/$CASE.pagrpc ]]; then
		row "gRPC raw, generator + reference" "perf_analyzer + reference" "$(single "$CASE.pagrpc")" "$(median "$CASE.grpc")" "" "$(single "$CASE.pagrpc.why")"
		row "REST binary, generator + reference" "perf_analyzer + reference" "$(single "$CASE.pahttp")" "$(median "$CASE.binary")" "" "$(single "$CASE.pahttp.why")"
	fi
	if [[ -f $WORK/$CASE.pacgrpc ]]; then
		row "gRPC raw, generator alone (canned server)" "perf_analyzer + canned server" "$(single "$CASE.pacgrpc")" "$(median "$CASE.cgrpc")" ">=2" "$(single "$CASE.pacgrpc.why")"
		row "REST binary, generator alone (canned server)" "perf_analyzer + canned server" "$(single "$CASE.pachttp")" "$(median "$CASE.cbinary")" ">=2" "$(single "$CASE.pachttp.why")"
	fi
	if [[ -s $WORK/$CASE.notes ]]; then
		echo
		echo "Failed requests: $(paste -sd';' "$WORK/$CASE.notes")."
	fi
done
echo
echo "The perf_analyzer rows are one run each after the rounds (its own stable windows of 100 requests), against the median round of oipkit load; they are not paired. The encoding/json anchor is \`go test -bench JSONRoundTrip ./bench/echo/\` (median of 3), round trips per second of one process on one core. Not measured here: the 16 MiB case with perf_analyzer (LARGE_PA_16M=1 adds it)."
