"""The fixture models of shared/spec/fixtures.md as MLServer custom runtimes, written the way
MLServer's users write them: each model-settings.json beside this file declares the model's
inputs and outputs (its metadata) and names one class below as its implementation; predict()
decodes the inputs with MLServer's NumpyCodec (through MLModel.decode, which honours content
types) and encodes the outputs with it. Nothing here checks a request against the declared
metadata: what MLServer does with a request that disagrees with it is MLServer's finding.
"""

import re
from typing import AsyncIterator

import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec, StringCodec
from mlserver.types import InferenceRequest, InferenceResponse
from mlserver.utils import get_model_uri


class Fixture(MLModel):
    def arrays(self, payload: InferenceRequest) -> dict:
        return {inp.name: self.decode(inp, default_codec=NumpyCodec) for inp in payload.inputs}

    def respond(self, outputs: dict) -> InferenceResponse:
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name, arr) for name, arr in outputs.items()],
        )


class AddSub(Fixture):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = self.arrays(payload)
        return self.respond({"OUTPUT0": x["INPUT0"] + x["INPUT1"], "OUTPUT1": x["INPUT0"] - x["INPUT1"]})


class Identity(Fixture):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        return self.respond({"OUTPUT0": self.arrays(payload)["INPUT0"]})


class Versioned(Fixture):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        return self.respond({"OUTPUT0": self.arrays(payload)["INPUT0"] + np.int32(self.version)})


class ParamEcho(Fixture):
    """param_echo: OUTPUT0 is the custom request parameter "echo" as the model received it, read
    from the request's parameters the way MLServer's runtimes read theirs (payload.parameters, a
    pydantic model that keeps unknown members) and encoded with StringCodec."""

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        params = payload.parameters.model_dump() if payload.parameters is not None else {}
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[StringCodec.encode_output("OUTPUT0", [str(params.get("echo", ""))])],
        )


class StreamCount(Fixture):
    """Decoupled: INPUT0 = n gives n responses carrying 1..n. MLServer streams through
    predict_stream, an async generator over the requests of one ModelStreamInfer call (or one
    REST infer_stream request); predict() is not written, as for MLServer's own streaming
    runtimes."""

    async def predict_stream(self, payloads: AsyncIterator[InferenceRequest]) -> AsyncIterator[InferenceResponse]:
        async for payload in payloads:
            n = int(self.arrays(payload)["INPUT0"][0])
            for k in range(1, n + 1):
                yield self.respond({"OUTPUT0": np.array([k], dtype=np.int32)})


class TextGen(Fixture):
    """text_gen, for the generate routes MLServer serves (/generate is its infer, /generate_stream
    its infer_stream): text_input back, whole from predict, one word per response (each word with
    the spaces that follow it) from predict_stream, at most the request parameter max_tokens words
    (default 20). Text is decoded and encoded with MLServer's StringCodec, as its LLM runtimes do."""

    def words(self, payload: InferenceRequest) -> list:
        text = StringCodec.decode_input(payload.inputs[0])[0]
        params = payload.parameters.model_dump() if payload.parameters is not None else {}
        return re.findall(r" *[^ ]+ *", text)[: int(params.get("max_tokens", 20))]

    def text(self, chunk: str) -> InferenceResponse:
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[StringCodec.encode_output("text_output", [chunk])],
        )

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        return self.text("".join(self.words(payload)))

    async def predict_stream(self, payloads: AsyncIterator[InferenceRequest]) -> AsyncIterator[InferenceResponse]:
        async for payload in payloads:
            for word in self.words(payload):
                yield self.text(word)


class NeverReady(Identity):
    """never_ready: load() reports that the model did not load by returning False, MLModel.load's
    way to say so; MLServer keeps the model registered and not ready (a load() that raises instead
    makes MLServer drop the model from its registry). predict() is Identity's, never meant to run."""

    async def load(self) -> bool:
        return False


class Broken(MLModel):
    """A model whose artifact is missing: load() resolves parameters.uri the way MLServer's own
    runtimes do (get_model_uri), which raises because ./model.npy does not exist."""

    async def load(self) -> bool:
        self.weights = np.load(await get_model_uri(self.settings))
        return True
