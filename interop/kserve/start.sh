#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs the KServe ModelServer with the fixture models in the
# foreground on 127.0.0.1. VENV defaults to .venv-interop/kserve (interop/setup-venv.sh kserve).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/kserve}
: "${1:?usage: start.sh HTTP_PORT GRPC_PORT}" "${2:?usage: start.sh HTTP_PORT GRPC_PORT}"
# ModelServer parses sys.argv itself (parse_known_args), so pass the ports only as positional
# arguments to server.py, which hands them to the constructor.
exec "$VENV/bin/python" "$HERE/server.py" "$1" "$2"
