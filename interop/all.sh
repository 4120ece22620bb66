#!/usr/bin/env bash
# all.sh [RUNTIME...] — the interop run behind `make interop`: for each runtime in turn (default
# reference triton pytriton mlserver kserve torchserve; never two servers at once) install or reuse its venv,
# then run interop/run.sh (start, conform, tritonclient check, load runs, stop), each bounded
# by RUNTIME_TIMEOUT seconds (default 600). Then write reports/compatibility.{md,html} (oipkit matrix),
# each runtime's findings.md (oipkit report --findings) and reports/performance.md (oipkit report
# --compare) from what the runs left in reports/runtimes/.
# Prints one line per check and "interop: N passed, N failed" (", N skipped" if any); exits 1 if a
# check failed. Every server it started is stopped on exit, also on failure or interruption.
# INTEROP_ALLOW_SETUP_FAILURE=1: a venv that cannot be installed (a registry outage) skips that
# runtime's checks instead of failing them; a check that runs and fails always fails.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RUNTIMES=("$@")
(( ${#RUNTIMES[@]} )) || RUNTIMES=(reference triton pytriton mlserver kserve torchserve)
HOME_DIR=${INTEROP_HOME:-$ROOT/.venv-interop}
REPORTS=${INTEROP_REPORTS:-$ROOT/reports/runtimes}
OIPKIT=${OIPKIT:-$ROOT/bin/oipkit}
export INTEROP_HOME=$HOME_DIR INTEROP_REPORTS=$REPORTS OIPKIT
mkdir -p "$HOME_DIR/run" "$REPORTS" || { echo "interop: cannot create $HOME_DIR/run or $REPORTS" >&2; exit 2; }
export INTEROP_RESULTS=$HOME_DIR/run/results.txt
: > "$INTEROP_RESULTS"
t0=$(date +%s)

# Long steps run through bounded, in a process group of their own that the traps can end: bash
# defers a trap while a foreground command runs, but not while it waits for a background job.
child=
bounded() { # bounded SECONDS COMMAND...
  timeout --kill-after=30 "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=
  return "$rc"
}
interrupted() {
  echo "interop: interrupted" >&2
  if [[ -n $child ]]; then
    kill -TERM -- "-$child" 2> /dev/null # timeout leads its group: run.sh and its checks
    wait "$child" 2> /dev/null           # run.sh stops its server on the way out
  fi
  exit 130
}
trap '"$HERE/stop.sh" "${RUNTIMES[@]}" > /dev/null 2>&1' EXIT
trap interrupted INT TERM

[[ -x $OIPKIT ]] || { echo "interop: $OIPKIT missing (make build)" >&2; exit 2; }
for tool in python3 timeout setsid; do
  command -v "$tool" > /dev/null || { echo "interop: $tool is required" >&2; exit 2; }
done
if ! command -v curl > /dev/null; then # start.sh polls readiness with curl
  "$ROOT/scripts/apt-install.sh" curl || { echo "interop: curl is required" >&2; exit 2; }
fi

setup() { # setup VENV: install or reuse; 0 ok, 1 failed (recorded), 2 skipped (recorded)
  local log=$HOME_DIR/run/setup-$1.log
  if bounded 1200 "$HERE/setup-venv.sh" "$1" > "$log" 2>&1; then
    tail -n 1 "$log"
    return 0
  fi
  tail -n 5 "$log" >&2
  if [[ ${INTEROP_ALLOW_SETUP_FAILURE:-0} == 1 ]]; then
    echo "skip $2 setup-$1 (venv install failed; INTEROP_ALLOW_SETUP_FAILURE=1; log $log)" >> "$INTEROP_RESULTS"
    echo "check: skip $2 setup-$1"
    return 2
  fi
  echo "fail $2 setup-$1 (venv install failed; log $log)" >> "$INTEROP_RESULTS"
  echo "check: fail $2 setup-$1"
  return 1
}

# venv_of RUNTIME: the venv a runtime runs from (runtime.env VENV_NAME, default its own name;
# none with NO_VENV=1). PyTriton and standalone Triton share one: the same wheel.
venv_of() {
  ( NO_VENV=0 VENV_NAME=$1
    # shellcheck source=/dev/null
    source "$HERE/$1/runtime.env"
    (( NO_VENV )) || echo "$VENV_NAME" )
}

if ! setup tritonclient all; then
  echo "interop: tritonclient checks will be skipped" >&2
fi
# grpcurl, pinned in the Makefile, into .tools/bin: the gRPC reproducers interop/replay.py runs.
if ! bounded 600 make -s -C "$ROOT" grpcurl > "$HOME_DIR/run/setup-grpcurl.log" 2>&1; then
  tail -n 5 "$HOME_DIR/run/setup-grpcurl.log" >&2
  echo "fail all setup-grpcurl (make grpcurl failed, log $HOME_DIR/run/setup-grpcurl.log: the gRPC reproducers cannot run)" >> "$INTEROP_RESULTS"
  echo "check: fail all setup-grpcurl"
fi
for r in "${RUNTIMES[@]}"; do
  echo "== $r"
  start=$(date +%s)
  venv=$(venv_of "$r")
  if [[ -n $venv ]] && ! setup "$venv" "$r"; then
    continue
  fi
  bounded "${RUNTIME_TIMEOUT:-600}" "$HERE/run.sh" "$r"
  rc=$?
  "$HERE/stop.sh" "$r" > /dev/null 2>&1 # in case timeout cut run.sh short
  if (( rc == 124 || rc == 137 )); then
    echo "fail $r run (did not finish within ${RUNTIME_TIMEOUT:-600}s)" >> "$INTEROP_RESULTS"
    echo "check: fail $r run (timeout)"
  fi
  echo "== $r done in $(( $(date +%s) - start ))s"
done

# The documents, from every report and load result present (committed ones included, when only
# some runtimes were run).
reports=() loads=() streams=()
for r in reference triton pytriton mlserver kserve torchserve; do
  [[ -f $REPORTS/$r/report.json ]] && reports+=("$REPORTS/$r/report.json")
  for p in http grpc-raw grpc; do
    [[ -f $REPORTS/$r/load-$p.json ]] && loads+=("$REPORTS/$r/load-$p.json")
  done
  [[ -f $REPORTS/$r/load-stream.json ]] && streams+=("$REPORTS/$r/load-stream.json")
done
# Implementations that cannot run here: a row each, with why and the commands (blocked.json).
blocked=()
for f in "$REPORTS"/*/blocked.json; do
  [[ -f $f ]] && blocked+=("$f")
done
OUTDIR=$(dirname "$REPORTS")
if (( ${#reports[@]} )) && "$OIPKIT" matrix -o "$OUTDIR/compatibility.md" --html "$OUTDIR/compatibility.html" "${reports[@]}" "${blocked[@]}"; then
  echo "pass all matrix ($OUTDIR/compatibility.md, compatibility.html)" >> "$INTEROP_RESULTS"
else
  echo "fail all matrix (no reports, or oipkit matrix failed)" >> "$INTEROP_RESULTS"
fi
# Each runtime's findings file: its defects written as upstream bug reports, next to its report.
findings_ok=pass
for f in "${reports[@]}"; do
  "$OIPKIT" report --findings "$(dirname "$f")/findings.md" "$f" || findings_ok=fail
done
echo "$findings_ok all findings (findings.md next to each report.json)" >> "$INTEROP_RESULTS"
if (( ${#loads[@]} )) && {
  machine="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB RAM, $(. /etc/os-release && echo "$PRETTY_NAME"), Linux $(uname -r)"
  {
    echo "# Throughput and latency: reference server and real runtimes side by side"
    echo
    echo "Written by \`make interop\` (interop/all.sh → \`oipkit report --compare\`) on $(date -u +%Y-%m-%dT%H:%MZ)."
    echo "Machine: $machine. Each server ran alone, on loopback, sharing the CPUs with \`oipkit load\`."
    echo "Server set-ups are those of interop/ (fixture model add_sub; Triton: python backend, \`max_batch_size 0\`; PyTriton: the"
    echo "same Triton with PyTriton's Python proxy and callable in front; MLServer: \`parallel_workers 0\`; KServe: one process,"
    echo "gRPC only (REST infer without an id fails); TorchServe is absent: it serves no model readiness). Triton's python backend moves every request through a stub process, so its figures"
    echo "are those of Python models in Triton, not of Triton with a native backend."
    echo "These are short runs for a side-by-side view, not benchmarks: repeated runs on the 2-core development machine varied"
    echo "by up to ±15%; read the ratios, not the last digit."
    echo
    "$OIPKIT" report --compare "${loads[@]}"
    if (( ${#streams[@]} )); then
      echo
      echo "## Streaming: gRPC ModelStreamInfer, decoupled stream_count (8 responses a request)"
      echo
      echo "\`oipkit load --streaming\`, closed loop at the same concurrency: response time is the time to the last response;"
      echo "first response is the time to the first, gap the time between two responses of one request. MLServer answers in its own"
      echo "message shape (plain ModelInferResponse, A-39), which \`--stream-shape auto\` detects from its metadata: one stream per"
      echo "request, half-closed after it, the stream's end completing the request; the others carry one request at a time on a reused stream."
      echo
      "$OIPKIT" report --compare "${streams[@]}"
    fi
  } > "$OUTDIR/performance.md.tmp"
}; then
  mv "$OUTDIR/performance.md.tmp" "$OUTDIR/performance.md"
  echo "pass all performance ($OUTDIR/performance.md)" >> "$INTEROP_RESULTS"
else
  rm -f "$OUTDIR/performance.md.tmp"
  echo "fail all performance (no load results, or oipkit report --compare failed)" >> "$INTEROP_RESULTS"
fi

# Each runtime's README (its triage) must describe the report just written: counts and findings.
ran=()
for r in "${RUNTIMES[@]}"; do [[ -f $REPORTS/$r/README.md ]] && ran+=("$r"); done
if (( ${#ran[@]} )); then
  if line=$(python3 "$HERE/readme-check.py" "$REPORTS" "${ran[@]}"); then
    echo "pass all readme-check (${line#readme-check: })" >> "$INTEROP_RESULTS"
  else
    echo "$line"
    echo "fail all readme-check (a runtime README disagrees with its report.json: see above)" >> "$INTEROP_RESULTS"
  fi
fi

echo
echo "== summary ($(( $(date +%s) - t0 ))s)"
grep -v '^pass ' "$INTEROP_RESULTS" || true
grep '^pass [^ ]* replay ' "$INTEROP_RESULTS" || true # the reproducer counts: a differing one passes
passed=$(grep -c '^pass ' "$INTEROP_RESULTS")
failed=$(grep -c '^fail ' "$INTEROP_RESULTS")
skipped=$(grep -c '^skip ' "$INTEROP_RESULTS")
if (( skipped )); then
  echo "interop: $passed passed, $failed failed, $skipped skipped"
else
  echo "interop: $passed passed, $failed failed"
fi
(( failed == 0 ))
