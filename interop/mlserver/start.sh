#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs MLServer with the fixture models in the foreground on 127.0.0.1.
# VENV defaults to .venv-interop/mlserver (interop/setup-venv.sh mlserver creates it).
#
# Models are loaded through MLServer's model-repository API, not at start-up
# (settings.json load_models_at_startup false): MLServer shuts itself down when any model fails
# to load at start-up, and `broken` must fail. So this script starts the server, then asks
# POST /v2/repository/models/NAME/load for every model of repo/ except broken — MLServer's
# explicit model control, as a user who manages models through that API runs it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/mlserver}
export MLSERVER_HTTP_PORT=${1:?usage: start.sh HTTP_PORT GRPC_PORT}
export MLSERVER_GRPC_PORT=${2:?usage: start.sh HTTP_PORT GRPC_PORT}
# settings.json leaves the ports out on purpose: values in the file would win over these variables.
"$VENV/bin/mlserver" start "$HERE/repo" &
pid=$!
trap 'kill -TERM "$pid" 2> /dev/null; wait "$pid"; exit 143' TERM INT
base=http://127.0.0.1:$MLSERVER_HTTP_PORT
until curl -sf -m 2 -o /dev/null "$base/v2/health/live"; do
  kill -0 "$pid" 2> /dev/null || { wait "$pid"; exit; }
  sleep 0.5
done
# The model names, once each (versioned-1 and versioned-2 are both "versioned").
names=$(sed -s -n '0,/"name"/s/^ *"name": *"\([^"]*\)".*/\1/p' "$HERE"/repo/*/model-settings.json | sort -u)
for name in $names; do
  [[ $name != broken ]] || continue
  # DEPLOY_NEVER_READY=0 (interop/run.sh, for the load runs: oipkit load waits for server readiness).
  [[ $name != never_ready || ${DEPLOY_NEVER_READY:-1} != 0 ]] || continue
  curl -sS -m 60 -X POST -o /dev/null -w "load $name: HTTP %{http_code}\n" "$base/v2/repository/models/$name/load"
done
wait "$pid"
