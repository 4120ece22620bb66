#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs the oipkit reference server in the foreground on 127.0.0.1,
# so interop/ can treat it like the third-party runtimes. OIPKIT defaults to bin/oipkit
# (make build).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OIPKIT=${OIPKIT:-$HERE/../../bin/oipkit}
exec "$OIPKIT" serve --http "127.0.0.1:${1:?usage: start.sh HTTP_PORT GRPC_PORT}" --grpc "127.0.0.1:${2:?usage: start.sh HTTP_PORT GRPC_PORT}" --log-level warn
