#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs TorchServe 0.12 in its Open Inference Protocol mode
# (ts_open_inference_protocol) in the foreground on 127.0.0.1, with the fixture handlers
# (add_sub.py, identity.py) archived by torch-model-archiver into a model store. The management API takes
# HTTP_PORT+2 and the metrics API HTTP_PORT+4; gRPC management takes GRPC_PORT+2. VENV defaults
# to .venv-interop/torchserve. TorchServe's frontend is Java: OpenJDK 17 must be on PATH.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/torchserve}
HTTP_PORT=${1:?usage: start.sh HTTP_PORT GRPC_PORT}
GRPC_PORT=${2:?usage: start.sh HTTP_PORT GRPC_PORT}
# TorchServe writes logs/ into its working directory: keep that out of the work tree.
WORK=${TORCHSERVE_WORK:-${INTEROP_HOME:-$HERE/../../.venv-interop}/run/torchserve}
source "$HERE/runtime.env"
rm -rf "$WORK"
mkdir -p "$WORK/model-store"
for m in $FIXTURES; do
  handler=identity.py
  [[ $m != add_sub ]] || handler=add_sub.py
  "$VENV/bin/torch-model-archiver" --model-name "$m" --version 1 --handler "$HERE/$handler" \
    --export-path "$WORK/model-store"
done
cat > "$WORK/config.properties" <<PROPS
inference_address=http://127.0.0.1:$HTTP_PORT
management_address=http://127.0.0.1:$((HTTP_PORT + 2))
metrics_address=http://127.0.0.1:$((HTTP_PORT + 4))
grpc_inference_address=127.0.0.1
grpc_inference_port=$GRPC_PORT
grpc_management_address=127.0.0.1
grpc_management_port=$((GRPC_PORT + 2))
ts_open_inference_protocol=true
service_envelope=kservev2
model_store=$WORK/model-store
load_models=all
default_workers_per_model=1
disable_system_metrics=true
PROPS
cd "$WORK"
export PATH="$VENV/bin:$PATH"
exec "$VENV/bin/torchserve" --start --foreground --ncs --disable-token-auth --ts-config "$WORK/config.properties"
