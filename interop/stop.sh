#!/usr/bin/env bash
# stop.sh RUNTIME... — stops runtimes started by start.sh: SIGTERM to the recorded process group,
# SIGKILL after STOP_DEADLINE seconds (default 30), then removes the PID file. With no argument,
# stops every runtime that has a PID file. Only ever signals the recorded process group.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUN=${INTEROP_HOME:-$ROOT/.venv-interop}/run
DEADLINE=${STOP_DEADLINE:-30}

# kill -0 on a process group succeeds while any member lives (no procps needed).
group_alive() { kill -0 -- "-$1" 2> /dev/null; }

stop_one() {
  local runtime=$1 pidfile=$RUN/$1.pid pid t0
  [[ -f $pidfile ]] || { echo "stop: $runtime not running (no $pidfile)"; return 0; }
  pid=$(cat "$pidfile")
  # start.sh runs the server under setsid, so its pid is also its process-group id; PyTriton's
  # tritonserver and Python-backend stubs live in that group.
  if ! group_alive "$pid"; then
    echo "stop: $runtime (pid $pid) already gone"
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM -- "-$pid" 2>/dev/null
  t0=$(date +%s)
  while group_alive "$pid" && (( $(date +%s) - t0 < DEADLINE )); do sleep 0.5; done
  if group_alive "$pid"; then
    echo "stop: $runtime (pgid $pid) still running after ${DEADLINE}s; SIGKILL" >&2
    kill -KILL -- "-$pid" 2>/dev/null
    sleep 1
    # PyTriton names its shared-memory regions after the pid of the Python process.
    rm -f /dev/shm/pytrtion"$pid"-* 2>/dev/null
  fi
  rm -f "$pidfile"
  echo "stop: $runtime stopped after $(( $(date +%s) - t0 ))s"
}

if (( $# == 0 )); then
  shopt -s nullglob
  set -- $(for f in "$RUN"/*.pid; do basename "$f" .pid; done)
fi
rc=0
for r in "$@"; do stop_one "$r" || rc=1; done
exit $rc
