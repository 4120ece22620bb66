"""Fixture models (shared/spec/fixtures.md) served by real Triton 2.51 through PyTriton.

Usage: server.py HTTP_PORT GRPC_PORT [--with-versioned]
(binds 127.0.0.1 only; foreground; SIGINT/SIGTERM stops)

Every model uses batching=False (config.pbtxt max_batch_size: 0), so Triton reports exactly the
declared shapes with no added batch dimension, and a non-batched inference callable: PyTriton
hands it a list of requests and expects one dict of outputs per request. The callables compute
and nothing else: what Triton and PyTriton do with a request that disagrees with the model is
theirs. Deployed: add_sub, identity_<t> (no bf16: numpy has none) and the stream_count, param_echo
and text_gen extension fixtures. Not deployed: versioned (--with-versioned shows why: see README.md).
"""

import logging
import re
import signal
import sys

import numpy as np
from pytriton.model_config import ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

# identity_<t> suffix -> numpy dtype PyTriton maps to the OIP datatype (BOOL ... BYTES).
# No BF16: numpy has no bfloat16 and PyTriton derives the Triton datatype from numpy.
IDENTITY_DTYPES = {
    "bool": np.bool_,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "fp16": np.float16,
    "fp32": np.float32,
    "fp64": np.float64,
    "bytes": np.bytes_,
}

# batching=False is how PyTriton writes max_batch_size: 0 into config.pbtxt.
NOT_BATCHED = ModelConfig(batching=False)


def add_sub(requests):
    return [{"OUTPUT0": req["INPUT0"] + req["INPUT1"], "OUTPUT1": req["INPUT0"] - req["INPUT1"]} for req in requests]


def identity(requests):
    return [{"OUTPUT0": req["INPUT0"]} for req in requests]


def versioned(version):
    def infer(requests):
        return [{"OUTPUT0": req["INPUT0"] + np.int32(version)} for req in requests]

    return infer


def stream_count(requests):
    # Decoupled: each yield sends one response per request; returning ends the stream.
    for req in requests:
        for k in range(1, req["INPUT0"][0] + 1):
            yield [{"OUTPUT0": np.array([k], dtype=np.int32)}]


def param_echo(requests):
    # PyTriton hands the request's parameters to the callable as Request.parameters.
    return [{"OUTPUT0": np.array([str((req.parameters or {}).get("echo", "")).encode()], dtype=np.bytes_)} for req in requests]


def text_gen(requests):
    # Decoupled, as standalone Triton's python-backend text_gen (interop/triton/models/text_gen.py):
    # Triton's generate routes cannot tell /generate from /generate_stream, so the optional `stream`
    # input (set by the client for token streaming) asks for one response per word; without it the
    # whole text is one response. At most the request parameter max_tokens words (default 20).
    for req in requests:
        text = req["text_input"].reshape(-1)[0]
        text = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        stream = "stream" in req and bool(req["stream"].reshape(-1)[0])
        max_tokens = int((req.parameters or {}).get("max_tokens", 20))
        words = re.findall(r" *[^ ]+ *", text)[:max_tokens]
        for chunk in words if stream else ["".join(words)]:
            yield [{"text_output": np.array([chunk.encode("utf-8")], dtype=np.bytes_)}]


def bind_fixtures(triton, with_versioned):
    i32 = lambda name, shape: Tensor(name=name, dtype=np.int32, shape=shape)  # noqa: E731
    triton.bind(
        model_name="add_sub",
        infer_func=add_sub,
        inputs=[i32("INPUT0", (-1, 16)), i32("INPUT1", (-1, 16))],
        outputs=[i32("OUTPUT0", (-1, 16)), i32("OUTPUT1", (-1, 16))],
        config=NOT_BATCHED,
    )
    for suffix, dtype in IDENTITY_DTYPES.items():
        triton.bind(
            model_name=f"identity_{suffix}",
            infer_func=identity,
            inputs=[Tensor(name="INPUT0", dtype=dtype, shape=(-1, -1))],
            outputs=[Tensor(name="OUTPUT0", dtype=dtype, shape=(-1, -1))],
            config=NOT_BATCHED,
        )
    # Extension fixture for gRPC ModelStreamInfer (Triton serves decoupled models on gRPC streams only).
    triton.bind(
        model_name="stream_count",
        infer_func=stream_count,
        inputs=[i32("INPUT0", (1,))],
        outputs=[i32("OUTPUT0", (1,))],
        config=ModelConfig(batching=False, decoupled=True),
    )
    # Extension fixture for parameters: OUTPUT0 is the custom request parameter "echo".
    triton.bind(
        model_name="param_echo",
        infer_func=param_echo,
        inputs=[i32("INPUT0", (1,))],
        outputs=[Tensor(name="OUTPUT0", dtype=np.bytes_, shape=(1,))],
        config=NOT_BATCHED,
    )
    # Extension fixture for generate / generate_stream (and decoupled ModelStreamInfer).
    triton.bind(
        model_name="text_gen",
        infer_func=text_gen,
        inputs=[
            Tensor(name="text_input", dtype=np.bytes_, shape=(1,)),
            Tensor(name="stream", dtype=np.bool_, shape=(1,), optional=True),
        ],
        outputs=[Tensor(name="text_output", dtype=np.bytes_, shape=(1,))],
        config=ModelConfig(batching=False, decoupled=True),
    )
    if with_versioned:
        # See README: PyTriton cannot keep two versions of one model loaded.
        for version in (1, 2):
            triton.bind(
                model_name="versioned",
                model_version=version,
                infer_func=versioned(version),
                inputs=[i32("INPUT0", (-1,))],
                outputs=[i32("OUTPUT0", (-1,))],
                config=NOT_BATCHED,
            )


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    if len(argv) not in (3, 4):
        print("usage: server.py HTTP_PORT GRPC_PORT [--with-versioned]", file=sys.stderr)
        return 2
    http_port, grpc_port = int(argv[1]), int(argv[2])
    with_versioned = len(argv) == 4 and argv[3] == "--with-versioned"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=http_port,
        grpc_address="127.0.0.1",
        grpc_port=grpc_port,
        allow_metrics=False,
        allow_gpu_metrics=False,
        allow_cpu_metrics=False,
        metrics_address="127.0.0.1",
    )
    # restricted_endpoints=[]: repository, statistics, shared-memory, trace and logging work
    # without the triton-access-token header that PyTriton 0.7 requires by default.
    security = TritonSecurityConfig(restricted_endpoints=[])
    # PyTriton only cleans up (workspace in ~/.cache/pytriton, shared memory, tritonserver) on
    # SIGINT; make SIGTERM, which interop/stop.sh sends, take the same path.
    signal.signal(signal.SIGTERM, on_sigterm)
    with Triton(config=config, security_config=security) as triton:
        bind_fixtures(triton, with_versioned)
        triton.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
