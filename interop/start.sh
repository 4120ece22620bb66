#!/usr/bin/env bash
# start.sh RUNTIME HTTP_PORT GRPC_PORT — starts interop/RUNTIME/start.sh in the
# background (own session and process group), writes .venv-interop/run/RUNTIME.pid and .log, and
# waits until GET /v2/health/ready answers 200 (or SERVER_READY_STATUS) and every fixture in the
# runtime's FIXTURES answers 200, within START_DEADLINE seconds (runtime.env; env overrides). On
# failure it prints the log tail, stops the server and exits 1. Start one runtime at a time: 2
# cores, and PyTriton allows one per machine.
set -euo pipefail
RUNTIME=${1:?usage: start.sh RUNTIME HTTP_PORT GRPC_PORT}
HTTP_PORT=${2:?usage: start.sh RUNTIME HTTP_PORT GRPC_PORT}
GRPC_PORT=${3:?usage: start.sh RUNTIME HTTP_PORT GRPC_PORT}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DIR=$HERE/$RUNTIME
RUN=${INTEROP_HOME:-$ROOT/.venv-interop}/run
deadline_override=${START_DEADLINE:-}
VENV_NAME=$RUNTIME
# shellcheck source=/dev/null
source "$DIR/runtime.env"
# The runtime's start.sh takes its venv from VENV (runtime.env VENV_NAME may share another's).
export VENV=${INTEROP_HOME:-$ROOT/.venv-interop}/$VENV_NAME
START_DEADLINE=${deadline_override:-$START_DEADLINE}
mkdir -p "$RUN"
PIDFILE=$RUN/$RUNTIME.pid LOG=$RUN/$RUNTIME.log

if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  echo "start: $RUNTIME already running (pid $(cat "$PIDFILE")); interop/stop.sh $RUNTIME first" >&2
  exit 1
fi
for port in "$HTTP_PORT" "$GRPC_PORT"; do
  # Someone else's server on the port would make the readiness poll below lie.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "start: 127.0.0.1:$port is already in use" >&2
    exit 1
  fi
done

launch() {
  setsid "$DIR/start.sh" "$HTTP_PORT" "$GRPC_PORT" > "$LOG" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$PIDFILE"
  echo "start: $RUNTIME pid $pid, http 127.0.0.1:$HTTP_PORT, grpc 127.0.0.1:$GRPC_PORT, log $LOG"
}

# READY_PATH (runtime.env) replaces the per-model readiness poll for a runtime whose OIP routes
# cannot tell (TorchServe: /ping answers 200 once every model has its workers).
# The gRPC port must accept connections too: TorchServe answers /ping before it starts gRPC.
ready() {
  (exec 3<>"/dev/tcp/127.0.0.1/$GRPC_PORT") 2>/dev/null || return 1
  if [[ -n ${READY_PATH:-} ]]; then
    curl -sf -m 2 -o /dev/null "http://127.0.0.1:$HTTP_PORT$READY_PATH"
    return
  fi
  # SERVER_READY_STATUS (runtime.env, default 200): what server readiness answers once every
  # fixture is loaded (Triton: 400, strict readiness counts never_ready, whose load always fails).
  [[ $(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/v2/health/ready") == "${SERVER_READY_STATUS:-200}" ]] || return 1
  local m
  for m in $FIXTURES; do
    curl -sf -m 2 -o /dev/null "http://127.0.0.1:$HTTP_PORT/v2/models/$m/ready" || return 1
  done
}

# WARMUP_PATH and WARMUP_BODY (runtime.env): one POST sent once the runtime is ready, for a runtime
# whose first inference takes far longer than the others (TorchServe's frontend sets up its OIP
# handling on the first one: about 11 s on an idle 2-core machine, then 10-20 ms); the suite's
# per-call timeout would otherwise read the route as not answering. The time it took is printed.
warm_up() {
  [[ -n ${WARMUP_PATH:-} ]] || return 0
  local w0=$SECONDS code
  code=$(curl -s -m 120 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$WARMUP_BODY" "http://127.0.0.1:$HTTP_PORT$WARMUP_PATH")
  echo "start: $RUNTIME warm-up POST $WARMUP_PATH answered HTTP $code after $(( SECONDS - w0 ))s"
}

# START_ATTEMPTS (runtime.env, default 1): how often a server that exits before it is ready is
# started again, within the one START_DEADLINE; each failed attempt's log is kept as LOG.N.
attempt=1
launch
t0=$(date +%s)
while (( $(date +%s) - t0 < START_DEADLINE )); do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "start: $RUNTIME exited before it was ready (attempt $attempt of ${START_ATTEMPTS:-1}); log tail:" >&2
    tail -n 40 "$LOG" >&2
    "$(dirname "$0")/stop.sh" "$RUNTIME" > /dev/null 2>&1 # what it left in its process group
    if (( attempt < ${START_ATTEMPTS:-1} )); then
      mv "$LOG" "$LOG.$attempt"
      attempt=$((attempt + 1))
      launch
      continue
    fi
    exit 1
  fi
  if ready; then
    echo "start: $RUNTIME ready after $(( $(date +%s) - t0 ))s"
    warm_up
    exit 0
  fi
  sleep 1
done
echo "start: $RUNTIME not ready within ${START_DEADLINE}s; log tail:" >&2
tail -n 40 "$LOG" >&2
"$(dirname "$0")/stop.sh" "$RUNTIME" >&2 || true
exit 1
