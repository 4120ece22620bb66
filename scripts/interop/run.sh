#!/usr/bin/env bash
# run.sh RUNTIME [HTTP_PORT GRPC_PORT] — one bounded interop pass against one runtime:
# set up its venv (and the tritonclient venv), start it, run interop/tritonclient_check.py with the
# transports and fixtures the runtime supports, stop it. Exits with the check's status.
# RUNTIME: pytriton | mlserver | kserve | reference (bin/oipkit, build it first).
# OIPKIT_CONFORM=1 also runs `oipkit conform` against it (report in .venv-interop/run/RUNTIME-report).
set -euo pipefail
RUNTIME=${1:?usage: run.sh RUNTIME [HTTP_PORT GRPC_PORT]}
HTTP_PORT=${2:-28000}
GRPC_PORT=${3:-28001}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
HOME_DIR=${INTEROP_HOME:-$ROOT/.venv-interop}
# shellcheck source=/dev/null
CHECK_ARGS=()
source "$ROOT/conformance/runtimes/$RUNTIME/runtime.env"

[[ ${NO_VENV:-0} == 1 ]] || "$HERE/setup-venv.sh" "$RUNTIME"
"$HERE/setup-venv.sh" tritonclient

trap '"$HERE/stop.sh" "$RUNTIME"' EXIT
"$HERE/start.sh" "$RUNTIME" "$HTTP_PORT" "$GRPC_PORT"

skips=()
for m in add_sub versioned identity_bool identity_uint8 identity_uint16 identity_uint32 identity_uint64 \
  identity_int8 identity_int16 identity_int32 identity_int64 identity_fp16 identity_fp32 identity_fp64 identity_bytes; do
  [[ " $FIXTURES " == *" $m "* ]] || skips+=(--skip-model "$m")
done
rc=0
timeout 300 "$HOME_DIR/tritonclient/bin/python" "$ROOT/interop/tritonclient_check.py" \
  --http "127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" --transports "$CHECK_TRANSPORTS" \
  "${skips[@]}" "${CHECK_ARGS[@]}" || rc=$?
if [[ ${OIPKIT_CONFORM:-0} == 1 ]]; then
  timeout 600 "${OIPKIT:-$ROOT/bin/oipkit}" conform --http "http://127.0.0.1:$HTTP_PORT" --grpc "127.0.0.1:$GRPC_PORT" \
    --report-dir "$HOME_DIR/run/$RUNTIME-report" || echo "run: oipkit conform exited $?" >&2
fi
exit $rc
