#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs Triton (via PyTriton) with the fixture models in the foreground
# on 127.0.0.1. VENV defaults to .venv-interop/pytriton (interop/setup-venv.sh pytriton).
# Only one PyTriton may run per machine.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/pytriton}
: "${1:?usage: start.sh HTTP_PORT GRPC_PORT}" "${2:?usage: start.sh HTTP_PORT GRPC_PORT}"
# The bundled tritonserver needs libpython3.x.so of the venv's interpreter.
LIBDIR=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$VENV/bin/python" "$HERE/server.py" "$1" "$2"
