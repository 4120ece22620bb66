#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs MLServer with the fixture models in the foreground on 127.0.0.1.
# VENV defaults to .venv-interop/mlserver (interop/setup-venv.sh mlserver creates it).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/mlserver}
export MLSERVER_HTTP_PORT=${1:?usage: start.sh HTTP_PORT GRPC_PORT}
export MLSERVER_GRPC_PORT=${2:?usage: start.sh HTTP_PORT GRPC_PORT}
# settings.json leaves the ports out on purpose: values in the file would win over these variables.
exec "$VENV/bin/mlserver" start "$HERE/repo"
