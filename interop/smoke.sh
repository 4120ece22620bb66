#!/usr/bin/env bash
# smoke.sh HTTP_PORT GRPC_PORT — quick curl + gRPC probe of a running OIP server on 127.0.0.1.
# Prints every request, its HTTP status and body, so the output can be pasted into a README.
# Exits 0 whatever the server answers: it records, it does not judge (see interop/tritonclient/check.py).
set -uo pipefail
HTTP_PORT=${1:?usage: smoke.sh HTTP_PORT GRPC_PORT}
GRPC_PORT=${2:?usage: smoke.sh HTTP_PORT GRPC_PORT}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${SMOKE_PYTHON:-${INTEROP_HOME:-$ROOT/.venv-interop}/tritonclient/bin/python}
BASE=http://127.0.0.1:$HTTP_PORT

req() { # METHOD PATH [JSON]
  local method=$1 path=$2 body=${3:-}
  echo "== $method $path${body:+ $body}"
  if [[ -n $body ]]; then
    curl -sS -m 10 -X "$method" -H 'Content-Type: application/json' -d "$body" -w '\n-> %{http_code}\n' "$BASE$path"
  else
    curl -sS -m 10 -X "$method" -w '\n-> %{http_code}\n' "$BASE$path"
  fi
}

row='[2147483647,1,2,3,4,5,6,7,8,9,10,11,12,13,14,-2147483648]'
ones='[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]'
req GET /v2
req GET /v2/health/live
req GET /v2/health/ready
req GET /v2/models/add_sub
req POST /v2/models/add_sub/infer "{\"inputs\":[{\"name\":\"INPUT0\",\"datatype\":\"INT32\",\"shape\":[1,16],\"data\":$row},{\"name\":\"INPUT1\",\"datatype\":\"INT32\",\"shape\":[1,16],\"data\":$ones}]}"
req POST /v2/models/add_sub/infer "{\"inputs\":[{\"name\":\"INPUT0\",\"datatype\":\"INT32\",\"shape\":[1,15],\"data\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},{\"name\":\"INPUT1\",\"datatype\":\"INT32\",\"shape\":[1,15],\"data\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}"
req POST /v2/models/no_such_model/infer '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1]}]}'
req GET /v2/models/identity_fp32
req POST /v2/models/identity_fp32/infer '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2,2],"data":[0.5,-1.25,3.4028234663852886e38,1e-45]}]}'
req GET /v2/models/identity_bytes
req POST /v2/models/identity_bytes/infer '{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,3],"data":["hello","","w\u00f6rld"]}]}'
req GET /v2/models/versioned
req GET /v2/models/versioned/versions/1
req GET /v2/models/versioned/versions/2
req GET /v2/models/versioned/versions/1/ready
req GET /v2/models/versioned/versions/2/ready
req POST /v2/models/versioned/versions/1/infer '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[3],"data":[10,20,30]}]}'
req POST /v2/models/versioned/versions/2/infer '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[3],"data":[10,20,30]}]}'
req POST /v2/models/versioned/infer '{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[3],"data":[10,20,30]}]}'

echo "== gRPC 127.0.0.1:$GRPC_PORT (tritonclient.grpc)"
"$PY" - "$GRPC_PORT" <<'PYEOF'
import sys
import numpy as np
import tritonclient.grpc as g
from tritonclient.utils import InferenceServerException

c = g.InferenceServerClient(f"127.0.0.1:{sys.argv[1]}")

def probe(name, fn):
    try:
        print(f"{name}: {fn()}")
    except InferenceServerException as e:
        print(f"{name}: InferenceServerException status={e.status()} msg={e.message()!r}")
    except Exception as e:  # noqa: BLE001 - record anything
        print(f"{name}: {type(e).__name__}: {e}")

def infer(model, arrays, dtypes, version=""):
    ins = []
    for i, (a, dt) in enumerate(zip(arrays, dtypes)):
        x = g.InferInput(f"INPUT{i}", list(a.shape), dt)
        x.set_data_from_numpy(a)
        ins.append(x)
    r = c.infer(model, ins, model_version=version)
    return {o.name: r.as_numpy(o.name).tolist() for o in r.get_response().outputs}

probe("ServerLive", c.is_server_live)
probe("ServerReady", c.is_server_ready)
probe("ServerMetadata", lambda: c.get_server_metadata(as_json=True))
probe("ModelMetadata add_sub", lambda: c.get_model_metadata("add_sub", as_json=True))
probe("ModelReady add_sub", lambda: c.is_model_ready("add_sub"))
a = np.arange(16, dtype=np.int32).reshape(1, 16); a[0, 0] = 2**31 - 1
probe("ModelInfer add_sub", lambda: infer("add_sub", [a, np.ones((1, 16), np.int32)], ["INT32", "INT32"]))
probe("ModelInfer add_sub [1,15]", lambda: infer("add_sub", [np.ones((1, 15), np.int32)] * 2, ["INT32", "INT32"]))
probe("ModelInfer identity_fp16", lambda: infer("identity_fp16", [np.array([[1.5, -0.0, np.inf]], np.float16)], ["FP16"]))
probe("ModelInfer identity_bytes", lambda: infer("identity_bytes", [np.array([[b"\x00\xff", b"hi"]], object)], ["BYTES"]))
probe("ModelInfer versioned v1", lambda: infer("versioned", [np.array([10, 20], np.int32)], ["INT32"], "1"))
probe("ModelInfer versioned v2", lambda: infer("versioned", [np.array([10, 20], np.int32)], ["INT32"], "2"))
probe("ModelInfer no_such_model", lambda: infer("no_such_model", [np.array([1], np.int32)], ["INT32"]))
PYEOF
