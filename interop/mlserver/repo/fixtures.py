"""The fixture models of shared/spec/fixtures.md as MLServer custom runtimes, written the way
MLServer's users write them: each model-settings.json beside this file declares the model's
inputs and outputs (its metadata) and names one class below as its implementation; predict()
decodes the inputs with MLServer's NumpyCodec (through MLModel.decode, which honours content
types) and encodes the outputs with it. Nothing here checks a request against the declared
metadata: what MLServer does with a request that disagrees with it is MLServer's finding.
"""

import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


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
