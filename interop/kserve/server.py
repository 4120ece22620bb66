"""Fixture models (shared/spec/fixtures.md) served by the KServe Python ModelServer (v2 protocol).

Usage: server.py HTTP_PORT GRPC_PORT   (foreground; SIGINT/SIGTERM stops)

The models are written the way KServe's users write them: get_input_types()/get_output_types()
declare the metadata, predict() reads inputs with InferRequest.get_input_by_name().as_numpy() and
returns an InferResponse of InferOutputs holding numpy arrays, with the request's id. Nothing here
checks a request against the metadata or picks the requested outputs: that is KServe's to do, or
not, and what it does is the finding.

KServe 0.21 hard-codes its binds (uvicorn host "0.0.0.0", gRPC "[::]:port"); the two small
patches in bind_loopback() narrow both to 127.0.0.1 before the server starts (the machine allows
loopback only; it changes where KServe listens, not what it answers). KServe does not support
model versions, so the `versioned` fixture is not deployed (see README.md).
"""

import sys

import numpy as np

from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer

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
    """A fixture model: its declared metadata (what get_input_types/get_output_types report) and
    predict(), which computes its outputs with KServe's InferRequest/InferResponse helpers."""

    def __init__(self, name, inputs, outputs):
        super().__init__(name)
        self.inputs, self.outputs = inputs, outputs
        self.ready = True

    def get_input_types(self):
        return self.inputs

    def get_output_types(self):
        return self.outputs

    def respond(self, payload: InferRequest, outputs: dict) -> InferResponse:
        types = {t["name"]: t["datatype"] for t in self.outputs}
        return InferResponse(
            response_id=payload.id,
            model_name=self.name,
            infer_outputs=[InferOutput(n, list(a.shape), types[n], data=a) for n, a in outputs.items()],
        )


class AddSub(Fixture):
    def __init__(self):
        i32 = lambda n: tensor(n, "INT32", [-1, 16])  # noqa: E731
        super().__init__("add_sub", [i32("INPUT0"), i32("INPUT1")], [i32("OUTPUT0"), i32("OUTPUT1")])

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        a = payload.get_input_by_name("INPUT0").as_numpy()
        b = payload.get_input_by_name("INPUT1").as_numpy()
        return self.respond(payload, {"OUTPUT0": a + b, "OUTPUT1": a - b})


class Identity(Fixture):
    def __init__(self, datatype):
        super().__init__(
            f"identity_{datatype.lower()}", [tensor("INPUT0", datatype, [-1, -1])], [tensor("OUTPUT0", datatype, [-1, -1])]
        )

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        return self.respond(payload, {"OUTPUT0": payload.get_input_by_name("INPUT0").as_numpy()})


class Classifier(Fixture):
    """classifier: OUTPUT0 is INPUT0 unchanged (FP32 [-1, 4], read as class scores). KServe has no
    classification extension of its own; deployed so that the probe observes what KServe does with
    a "classification" output parameter instead of guessing from a missing model."""

    def __init__(self):
        super().__init__("classifier", [tensor("INPUT0", "FP32", [-1, 4])], [tensor("OUTPUT0", "FP32", [-1, 4])])

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        return self.respond(payload, {"OUTPUT0": payload.get_input_by_name("INPUT0").as_numpy()})


class ParamEcho(Fixture):
    """param_echo: OUTPUT0 (BYTES [1]) is the custom request parameter "echo" as predict() received
    it in InferRequest.parameters."""

    def __init__(self):
        super().__init__("param_echo", [tensor("INPUT0", "INT32", [1])], [tensor("OUTPUT0", "BYTES", [1])])

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        echo = str((payload.parameters or {}).get("echo", ""))
        return self.respond(payload, {"OUTPUT0": np.array([echo.encode()], dtype=np.object_)})


class NeverReady(Fixture):
    """never_ready: its load() never reports the model loaded (KServe's Model.load contract: set
    self.ready once loaded; this one never does). ModelServer.start() registers only the models
    that are ready and then calls start() on each, which sets ready; so never_ready is registered
    on its own with ModelServer.register_model() and not handed to start(). predict() is
    identity_int32's, never meant to run."""

    def __init__(self):
        super().__init__("never_ready", [tensor("INPUT0", "INT32", [-1, -1])], [tensor("OUTPUT0", "INT32", [-1, -1])])
        self.ready = False

    def load(self) -> bool:
        return self.ready

    async def predict(self, payload: InferRequest, headers=None, response_headers=None) -> InferResponse:
        return self.respond(payload, {"OUTPUT0": payload.get_input_by_name("INPUT0").as_numpy()})


def main(argv):
    if len(argv) != 3:
        print("usage: server.py HTTP_PORT GRPC_PORT", file=sys.stderr)
        return 2
    bind_loopback()
    models = [AddSub(), Classifier(), ParamEcho()] + [Identity(dt) for dt in IDENTITY_DATATYPES]
    server = ModelServer(http_port=int(argv[1]), grpc_port=int(argv[2]), enable_latency_logging=False)
    never_ready = NeverReady()
    never_ready.load()
    server.register_model(never_ready)
    server.start(models)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
