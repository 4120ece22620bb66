"""Fixture models (shared/spec/fixtures.md) served by the KServe Python ModelServer (v2 protocol).

Usage: server.py HTTP_PORT GRPC_PORT   (foreground; SIGINT/SIGTERM stops)

KServe 0.21 hard-codes its binds (uvicorn host "0.0.0.0", gRPC "[::]:port"); the two small
patches in bind_loopback() narrow both to 127.0.0.1 before the server starts. KServe does not
support model versions, so the `versioned` fixture is not deployed (see README.md).
"""

import math
import sys
import uuid

import numpy as np
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer
from kserve.errors import InvalidInput

LOOPBACK = "127.0.0.1"

IDENTITY_DATATYPES = "BOOL UINT8 UINT16 UINT32 UINT64 INT8 INT16 INT32 INT64 FP16 FP32 FP64 BYTES".split()


def bind_loopback():
    import grpc.aio
    import uvicorn

    import kserve.protocol.grpc.server as kserve_grpc
    import kserve.protocol.rest.server as kserve_rest

    class LoopbackConfig(uvicorn.Config):
        def __init__(self, *args, **kwargs):
            kwargs["host"] = LOOPBACK
            super().__init__(*args, **kwargs)

    kserve_rest.uvicorn.Config = LoopbackConfig

    make_server = grpc.aio.server

    def loopback_server(*args, **kwargs):
        server = make_server(*args, **kwargs)
        add_port = server.add_insecure_port
        server.add_insecure_port = lambda addr: add_port(addr.replace("[::]", LOOPBACK))
        return server

    kserve_grpc.aio.server = loopback_server


def tensor(name, datatype, shape):
    return {"name": name, "datatype": datatype, "shape": shape}


class Fixture(Model):
    """A fixture: declared inputs/outputs, request checks against them, and compute()."""

    def __init__(self, name, inputs, outputs):
        super().__init__(name)
        self.inputs, self.outputs = inputs, outputs
        self.ready = True

    def get_input_types(self):
        return self.inputs

    def get_output_types(self):
        return self.outputs

    def arrays(self, req: InferRequest) -> dict:
        """Checks req against the declared inputs (KServe does not); returns name -> ndarray."""
        names = [i.name for i in req.inputs]
        if len(names) != len(set(names)):
            raise InvalidInput(f"inputs {sorted(names)} name an input more than once")
        got = {i.name: i for i in req.inputs}
        if set(got) != {t["name"] for t in self.inputs}:
            raise InvalidInput(f"inputs {sorted(got)} do not match the model's inputs {[t['name'] for t in self.inputs]}")
        out = {}
        for meta in self.inputs:
            inp = got[meta["name"]]
            shape = list(inp.shape)
            if inp.datatype != meta["datatype"]:
                raise InvalidInput(f"input {inp.name}: datatype {inp.datatype}, model expects {meta['datatype']}")
            if len(shape) != len(meta["shape"]) or any(m not in (-1, s) for m, s in zip(meta["shape"], shape)):
                raise InvalidInput(f"input {inp.name}: shape {shape}, model expects {meta['shape']}")
            try:
                arr = inp.as_numpy()
            except (ValueError, TypeError, OverflowError) as err:
                raise InvalidInput(f"input {inp.name}: {err}") from None
            if list(arr.shape) != shape or arr.size != math.prod(shape):
                raise InvalidInput(f"input {inp.name}: data does not match shape {shape}")
            out[inp.name] = arr
        return out

    async def predict(self, req: InferRequest, headers=None, response_headers=None) -> InferResponse:
        results = self.compute(self.arrays(req))
        wanted = [o.name for o in req.request_outputs] if req.request_outputs else [t["name"] for t in self.outputs]
        unknown = [n for n in wanted if n not in results]
        if unknown:
            raise InvalidInput(f"unknown requested outputs {unknown}")
        types = {t["name"]: t["datatype"] for t in self.outputs}
        outs = []
        for n in wanted:
            out = InferOutput(n, list(results[n].shape), types[n], data=results[n])
            if req.from_grpc:
                # Pre-encode as raw_output_contents. KServe 0.21's InferResponse.to_grpc fails
                # ("truth value of an array ... is ambiguous") on ndarray data when the request
                # used raw_input_contents, and tritonclient reads only raw outputs anyway.
                out.set_data_from_numpy(results[n], binary_data=True)
            outs.append(out)
        return InferResponse(
            # KServe's REST response model requires a string id; make one when the request had none.
            response_id=req.id if req.id is not None else str(uuid.uuid4()),
            model_name=self.name,
            infer_outputs=outs,
            use_binary_outputs=req.use_binary_outputs,
            requested_outputs=req.request_outputs,
        )


class AddSub(Fixture):
    def __init__(self):
        i32 = lambda n: tensor(n, "INT32", [-1, 16])  # noqa: E731
        super().__init__("add_sub", [i32("INPUT0"), i32("INPUT1")], [i32("OUTPUT0"), i32("OUTPUT1")])

    def compute(self, x):
        a, b = x["INPUT0"], x["INPUT1"]
        if a.shape != b.shape:
            raise InvalidInput(f"INPUT0 shape {list(a.shape)} and INPUT1 shape {list(b.shape)} differ")
        # int32 arrays wrap around on overflow, as the fixture requires.
        return {"OUTPUT0": np.add(a, b, dtype=np.int32), "OUTPUT1": np.subtract(a, b, dtype=np.int32)}


class Identity(Fixture):
    def __init__(self, datatype):
        super().__init__(
            f"identity_{datatype.lower()}", [tensor("INPUT0", datatype, [-1, -1])], [tensor("OUTPUT0", datatype, [-1, -1])]
        )

    def compute(self, x):
        return {"OUTPUT0": x["INPUT0"]}


def main(argv):
    if len(argv) != 3:
        print("usage: server.py HTTP_PORT GRPC_PORT", file=sys.stderr)
        return 2
    bind_loopback()
    models = [AddSub()] + [Identity(dt) for dt in IDENTITY_DATATYPES]
    ModelServer(http_port=int(argv[1]), grpc_port=int(argv[2]), enable_latency_logging=False).start(models)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
