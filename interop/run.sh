#!/usr/bin/env bash
# run.sh RUNTIME [HTTP_PORT GRPC_PORT] — one bounded interop pass against one runtime whose venv
# is installed (interop/setup-venv.sh RUNTIME): start it on loopback, then
#   conform      bin/oipkit conform over REST and gRPC into reports/runtimes/RUNTIME/ (report.json,
#                report.md, report.html; junit.xml is not committed); the run must complete (exit 0, 3 or 4,
#                never 2 or a timeout) and its failed, lenient, skipped and not-run requirements
#                must be exactly EXPECT_FAILED, EXPECT_BLOCKED (failing only on answers that fail
#                another requirement), EXPECT_LENIENT, EXPECT_SKIPPED and EXPECT_NOT_RUN of
#                the runtime's runtime.env (the triage)
#   replay       interop/replay.py: each findings-file reproducer run again (RUNTIME-replay.txt); fails
#                only when a reproducer cannot run, a changed answer is counted, not failed
#   conform-again the same conform a second time (not committed): every requirement's status must be
#                the same as in the first run (no verdict flips)
#   tritonclient interop/tritonclient/check.py with the runtime's transports (tritonclient.txt)
#   load-PROTO   bin/oipkit load add_sub, closed loop, concurrency LOAD_CONCURRENCY (4), LOAD_DURATION
#                (10s) after a 1s warm-up, every response validated, no failed request, for PROTO
#                in http (REST JSON), grpc-raw and grpc (typed) (load-PROTO.json)
# and stop it by its recorded PID, also on failure or interruption. Each check appends
# "pass|fail|skip RUNTIME CHECK [why]" to INTEROP_RESULTS (if set) and prints it. Exits 1 if a
# check failed. RUNTIME: a folder of interop/ with a runtime.env. Env: OIPKIT (bin/oipkit),
# INTEROP_HOME (.venv-interop), INTEROP_REPORTS (reports/runtimes).
set -uo pipefail
RUNTIME=${1:?usage: run.sh RUNTIME [HTTP_PORT GRPC_PORT]}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
HOME_DIR=${INTEROP_HOME:-$ROOT/.venv-interop}
OIPKIT=${OIPKIT:-$ROOT/bin/oipkit}
CHECK_ARGS=() EXPECT_FAILED="" EXPECT_BLOCKED="" EXPECT_LENIENT="" EXPECT_SKIPPED="" EXPECT_NOT_RUN="" GRPC_NOT_OIP=0 STREAM_LOAD=0 LOAD_PROTOCOLS="http grpc-raw grpc"
# shellcheck source=/dev/null
source "$HERE/$RUNTIME/runtime.env"
HTTP_PORT=${2:-$HTTP_PORT}
GRPC_PORT=${3:-$GRPC_PORT}
OUT=${INTEROP_REPORTS:-$ROOT/reports/runtimes}/$RUNTIME
LOAD_CONCURRENCY=${LOAD_CONCURRENCY:-4}
LOAD_DURATION=${LOAD_DURATION:-10s}
mkdir -p "$OUT"
failed=0

record() { # record pass|fail|skip CHECK [WHY]
  local line="$1 $RUNTIME $2${3:+ ($3)}"
  echo "check: $line"
  [[ -z ${INTEROP_RESULTS:-} ]] || echo "$line" >> "$INTEROP_RESULTS"
  [[ $1 != fail ]] || failed=1
}

# The checks run in this script's process group (timeout --foreground), so a signal to the group
# ends them at once and the EXIT trap stops the server.
trap '"$HERE/stop.sh" "$RUNTIME"' EXIT
trap 'exit 130' INT TERM
if ! "$HERE/start.sh" "$RUNTIME" "$HTTP_PORT" "$GRPC_PORT"; then
  record fail start "did not start or get ready within ${START_DEADLINE}s (see above); log $HOME_DIR/run/$RUNTIME.log"
  exit 1
fi

ready() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$HTTP_PORT/v2/health/ready"; }
ready_before=$(ready)

# conform: must complete; the failed/skipped requirements must match the triage.
rm -f "$OUT/report.json" "$OUT/report.md" "$OUT/report.html" "$OUT/junit.xml"
targets=(--http "http://127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT")
(( ! GRPC_NOT_OIP )) || targets=(--http "http://127.0.0.1:$HTTP_PORT")
# DECLARED_FIXTURES (runtime.env): fixtures the runtime serves but cannot show through model
# metadata or readiness (TorchServe), declared so that the specs that need them run.
[[ -z ${DECLARED_FIXTURES:-} ]] || targets+=(--fixtures "${DECLARED_FIXTURES// /,}")
timeout --foreground 300 "$OIPKIT" conform "${targets[@]}" --report-dir "$OUT" > "$HOME_DIR/run/$RUNTIME-conform.txt" 2>&1
rc=$?
sed -n '/^OIP conformance:/,/^requirements:/p' "$HOME_DIR/run/$RUNTIME-conform.txt"
# Exit 2 (run incomplete) is expected only of a runtime that a request kills before the last spec
# (EXPECT_NOT_RUN lists what it leaves not run); the statuses are then checked as for a full run.
[[ $rc != 2 || -z $EXPECT_NOT_RUN ]] || rc=expected-incomplete
case $rc in
  0 | 3 | 4 | expected-incomplete)
    if diff=$(python3 - "$OUT/report.json" "$EXPECT_FAILED" "$EXPECT_BLOCKED" "$EXPECT_LENIENT" "$EXPECT_SKIPPED" "$EXPECT_NOT_RUN" <<'PYEOF'
import json, sys
rep = json.load(open(sys.argv[1]))
statuses = ("failed", "blocked", "lenient", "skipped", "not-run")
got = {s: {q["id"] for q in rep["requirements"] if q["status"] == s} for s in statuses}
want = {s: set(arg.split()) for s, arg in zip(statuses, sys.argv[2:])}
out = []
for s in statuses:
    for i in sorted(got[s] - want[s]):
        out.append(f"{i} is {s}, not expected (triage it, then list it in runtime.env)")
    for i in sorted(want[s] - got[s]):
        out.append(f"{i} is expected {s} but is {next((q['status'] for q in rep['requirements'] if q['id'] == i), '?')}")
print("; ".join(out))
sys.exit(1 if out else 0)
PYEOF
    ); then
      record pass conform
    else
      record fail conform "$diff"
    fi ;;
  124) record fail conform "did not finish within 300s; output $HOME_DIR/run/$RUNTIME-conform.txt" ;;
  *) record fail conform "exit $rc: run incomplete; output $HOME_DIR/run/$RUNTIME-conform.txt" ;;
esac
rm -f "$OUT/junit.xml"

# A conformance run can leave a server not ready for good: the model-repository specs try to load
# `broken`, and Triton's strict readiness counts a failed model until it loads. The checks below
# need a ready server: start it again. A runtime that is not ready even when just started
# (SERVER_READY_STATUS: Triton, counting never_ready) cannot show that, so it is started again
# every time.
restart_if_not_ready() {
  if [[ ${SERVER_READY_STATUS:-200} != 200 || ($ready_before == 200 && $(ready) != 200) ]]; then
    echo "conform may have left $RUNTIME not ready (a failed model load); starting it again"
    "$HERE/stop.sh" "$RUNTIME" > /dev/null 2>&1
    if ! "$HERE/start.sh" "$RUNTIME" "$HTTP_PORT" "$GRPC_PORT"; then
      record fail start "did not start again after conform; log $HOME_DIR/run/$RUNTIME.log"
      exit 1
    fi
  fi
}
restart_if_not_ready

# replay: the reproducer of each distinct defect the findings file shows, run again while the
# runtime is up (interop/replay.py). An answer that differs from the recorded one is reported (the
# counts, and why in RUNTIME-replay.txt), not failed: a timing-dependent answer must not fail CI. A
# reproducer that cannot run (no grpcurl, no answer, unreadable output) fails the check.
if [[ -f $OUT/report.json ]]; then
  timeout --foreground 180 python3 "$HERE/replay.py" "$OUT/report.json" > "$HOME_DIR/run/$RUNTIME-replay.txt" 2>&1
  rc=$?
  grep -v '^showed ' "$HOME_DIR/run/$RUNTIME-replay.txt"
  summary=$(grep -m1 '^replay: ' "$HOME_DIR/run/$RUNTIME-replay.txt")
  case $rc in
    0) record pass replay "${summary#replay: }" ;;
    124) record fail replay "did not finish within 180s; output $HOME_DIR/run/$RUNTIME-replay.txt" ;;
    *) record fail replay "exit $rc: ${summary#replay: }; output $HOME_DIR/run/$RUNTIME-replay.txt" ;;
  esac
  restart_if_not_ready
else
  record skip replay "no report.json to replay"
fi

# conform-again: a CI gate that flips is switched off, so the same suite runs a second time against
# the same runtime (from the same state: restarted if the first run left it not ready) and every
# requirement's status must be the same in both runs. The second report is not committed.
AGAIN=$HOME_DIR/run/$RUNTIME-conform-again
rm -rf "$AGAIN"
timeout --foreground 300 "$OIPKIT" conform "${targets[@]}" --report-dir "$AGAIN" > "$AGAIN.txt" 2>&1
rc=$?
if [[ ! -f $OUT/report.json || ! -f $AGAIN/report.json ]]; then
  record fail conform-again "exit $rc: no report to compare; output $AGAIN.txt"
elif flips=$(python3 - "$OUT/report.json" "$AGAIN/report.json" <<'PYEOF'
import json, sys
first, second = ({q["id"]: q["status"] for q in json.load(open(p))["requirements"]} for p in sys.argv[1:3])
flips = [f"{i}: {first.get(i, 'absent')} then {second.get(i, 'absent')}" for i in sorted(set(first) | set(second)) if first.get(i) != second.get(i)]
print("; ".join(flips) if flips else f"{len(first)} requirements, 0 flips")
sys.exit(1 if flips else 0)
PYEOF
); then
  record pass conform-again "$flips"
else
  record fail conform-again "verdicts differ between two runs: $flips; reports $OUT/report.json and $AGAIN/report.json"
fi
restart_if_not_ready

# grpc-not-oip: a runtime whose gRPC port serves another service than inference.GRPCInferenceService
# (GRPC_NOT_OIP=1) must be called "not an OIP server" by oipkit conform, exit 2: that is the
# finding, recorded in grpc-not-oip.txt.
# Identification has 2 s: TorchServe's JVM can take longer for its first gRPC answer on a busy
# machine ("no answer within 2s"), so that answer is asked for again, up to three times.
if (( GRPC_NOT_OIP )); then
  for try in 1 2 3; do
    timeout --foreground 60 "$OIPKIT" conform --grpc "127.0.0.1:$GRPC_PORT" --report-dir "$HOME_DIR/run/$RUNTIME-grpc" \
      > "$OUT/grpc-not-oip.txt" 2>&1
    rc=$?
    grep -q 'no answer within' "$OUT/grpc-not-oip.txt" || break
  done
  line=$(grep -m1 'not an OIP server' "$OUT/grpc-not-oip.txt")
  if (( rc == 2 )) && [[ -n $line ]]; then
    record pass grpc-not-oip "$line"
  elif (( rc == 3 )) && grep -q 'Unimplemented: "Method not found: inference.GRPCInferenceService/ServerLive"' "$OUT/grpc-not-oip.txt"; then
    # An oipkit that does not identify its targets yet grades every gRPC spec instead.
    record skip grpc-not-oip "this oipkit does not identify targets: ServerLive is UNIMPLEMENTED for inference.GRPCInferenceService; see $OUT/grpc-not-oip.txt"
  else
    record fail grpc-not-oip "exit $rc, want 2 with 'not an OIP server'; see $OUT/grpc-not-oip.txt"
  fi
fi

# tritonclient: NVIDIA's client against the same server.
if [[ -f $HOME_DIR/tritonclient/.stamp ]]; then # written only by a complete install
  skips=()
  for m in add_sub versioned identity_bool identity_uint8 identity_uint16 identity_uint32 identity_uint64 \
    identity_int8 identity_int16 identity_int32 identity_int64 identity_fp16 identity_fp32 identity_fp64 identity_bytes; do
    [[ " $FIXTURES " == *" $m "* ]] || skips+=(--skip-model "$m")
  done
  # tritonclient-known-failures.txt: the runtime's triaged failures of this check, one check name a
  # line (# comments); a known failure that passes fails the check, as a new failure does.
  known=$HERE/$RUNTIME/tritonclient-known-failures.txt
  if [[ -f $known ]]; then
    while IFS= read -r line; do
      [[ -z $line || $line == \#* ]] || skips+=(--known-failure "$line")
    done < "$known"
  fi
  timeout --foreground 300 "$HOME_DIR/tritonclient/bin/python" "$HERE/tritonclient/check.py" \
    --http "127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" --transports "$CHECK_TRANSPORTS" \
    "${skips[@]}" "${CHECK_ARGS[@]}" > "$OUT/tritonclient.txt" 2>&1
  rc=$?
  summary=$(tail -n 1 "$OUT/tritonclient.txt")
  if (( rc == 0 )); then record pass tritonclient "$CHECK_TRANSPORTS: $summary"; else record fail tritonclient "exit $rc: $summary; see $OUT/tritonclient.txt"; fi
else
  record skip tritonclient "no tritonclient venv"
fi

# load_check NAME ARGS...: one short closed-loop oipkit load run (ARGS name the target, model and
# mode), recorded as check NAME with its rates; the result goes to $OUT/NAME.json.
load_check() {
  local name=$1
  shift
  timeout --foreground 120 "$OIPKIT" load "$@" --concurrency "$LOAD_CONCURRENCY" --duration "$LOAD_DURATION" \
    --warmup 1s --progress never --threshold 'errors==0' --threshold 'timeouts==0' \
    --output "$OUT/$name.json" > "$HOME_DIR/run/$RUNTIME-$name.txt" 2>&1
  local rc=$?
  local line
  line=$(grep -m1 '^rates:' "$HOME_DIR/run/$RUNTIME-$name.txt")
  if (( rc == 0 )); then record pass "$name" "${line#rates:    }"; else record fail "$name" "exit $rc; see $HOME_DIR/run/$RUNTIME-$name.txt"; fi
}

# oipkit load waits for server readiness, which never_ready keeps at 400 where SERVER_READY_STATUS
# says so: the load runs get the runtime started again without it.
if [[ ${SERVER_READY_STATUS:-200} != 200 ]] && [[ -n $LOAD_PROTOCOLS || $STREAM_LOAD == 1 ]]; then
  echo "starting $RUNTIME again without never_ready for the load runs"
  "$HERE/stop.sh" "$RUNTIME" > /dev/null 2>&1
  if ! DEPLOY_NEVER_READY=0 SERVER_READY_STATUS=200 "$HERE/start.sh" "$RUNTIME" "$HTTP_PORT" "$GRPC_PORT"; then
    record fail start "did not start without never_ready for the load runs; log $HOME_DIR/run/$RUNTIME.log"
    exit 1
  fi
fi

# load: the same short closed-loop run per protocol.
# LOAD_PROTOCOLS (runtime.env) leaves out a protocol the runtime cannot be loaded over; why is
# LOAD_SKIPPED_WHY, recorded as a skip.
for proto in http grpc-raw grpc; do
  [[ " $LOAD_PROTOCOLS " == *" $proto "* ]] || record skip "load-$proto" "${LOAD_SKIPPED_WHY:-not run for this runtime}"
done
for proto in $LOAD_PROTOCOLS; do
  target=(--grpc "127.0.0.1:$GRPC_PORT")
  [[ $proto != http ]] || target=(--http "http://127.0.0.1:$HTTP_PORT")
  load_check "load-$proto" "${target[@]}" --protocol "$proto" --model add_sub --validate
done

# load-stream: streaming over gRPC ModelStreamInfer to the decoupled fixture stream_count (8
# responses a request), for runtimes that deploy it (STREAM_LOAD=1 in runtime.env): time to first
# response, gaps between responses, time to the last.
if (( STREAM_LOAD )); then
  load_check load-stream --grpc "127.0.0.1:$GRPC_PORT" --model stream_count --streaming --input-data "$HERE/stream-count-8.json"
fi
exit $failed
