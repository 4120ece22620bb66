#!/usr/bin/env bash
# start.sh HTTP_PORT GRPC_PORT — runs the tritonserver binary that the nvidia-pytriton wheel ships
# (Triton 2.51, python backend only) in the foreground on 127.0.0.1, with repo/ as its model
# repository in explicit model-control mode: every fixture is loaded at start except `broken`,
# which is only listed (loading it always fails). `never_ready` is loaded at start like the others,
# and its load always fails: --exit-on-error=false keeps the server up serving the others (by
# default tritonserver exits: "error: creating server: Invalid argument - load failed for model
# 'never_ready'"), and strict readiness (the default) then answers /v2/health/ready 400 for good
# (runtime.env SERVER_READY_STATUS). VENV defaults to .venv-interop/pytriton: the PyTriton venv is
# shared (runtime.env VENV_NAME), since the wheel is the same.
# What PyTriton does for its own start is done here by hand: the python backend needs the stub
# binary built for the Python in use beside libtriton_python.so, tritonserver needs the wheel's
# bundled libraries and libpython on LD_LIBRARY_PATH, and the stub's embedded Python must find the
# venv's packages (numpy < 2: the stub fails on numpy 2 arrays) through the venv's bin/ on PATH.
# On this 2-core machine, when other work keeps the CPUs busy, tritonserver sometimes aborts while
# the python stubs start ("terminate called after throwing an instance of
# 'boost::interprocess::lock_exception'"); runtime.env START_ATTEMPTS lets interop/start.sh retry.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HERE/../../.venv-interop/pytriton}
HTTP_PORT=${1:?usage: start.sh HTTP_PORT GRPC_PORT}
GRPC_PORT=${2:?usage: start.sh HTTP_PORT GRPC_PORT}
read -r SITE PYVER LIBDIR < <("$VENV/bin/python" -c 'import sys, sysconfig; print(sysconfig.get_paths()["purelib"], f"{sys.version_info[0]}.{sys.version_info[1]}", sysconfig.get_config_var("LIBDIR"))')
DIST=$SITE/pytriton/tritonserver
# The backend directory: the wheel's python backend plus the stub for this Python, kept outside
# the venv so that the venv stays as pip left it.
BACKENDS=${TRITON_BACKENDS:-${INTEROP_HOME:-$HERE/../../.venv-interop}/run/triton-backends}
rm -rf "$BACKENDS"
mkdir -p "$BACKENDS"
cp -r "$DIST/backends/python" "$BACKENDS/python"
cp "$DIST/python_backend_stubs/$PYVER/triton_python_backend_stub" "$BACKENDS/python/"
export LD_LIBRARY_PATH="$SITE/nvidia_pytriton.libs:$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$VENV/bin:$PATH"
load=()
for m in "$HERE"/repo/*/; do
  m=$(basename "$m")
  # DEPLOY_NEVER_READY=0 (interop/run.sh, for the load runs: oipkit load waits for server readiness).
  [[ $m == broken || ($m == never_ready && ${DEPLOY_NEVER_READY:-1} == 0) ]] || load+=(--load-model "$m")
done
exec "$DIST/bin/tritonserver" \
  --model-repository "$HERE/repo" --backend-directory "$BACKENDS" --cache-directory "$DIST/caches" \
  --model-control-mode explicit "${load[@]}" --exit-on-error=false \
  --http-address 127.0.0.1 --http-port "$HTTP_PORT" --grpc-address 127.0.0.1 --grpc-port "$GRPC_PORT" \
  --allow-metrics false --allow-gpu-metrics false --allow-cpu-metrics false --log-verbose 0
