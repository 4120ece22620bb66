"""Fixture models (shared/spec/fixtures.md) as MLServer custom runtimes.

Each model-settings.json next to this file names one class below as its "implementation" and
declares the fixture's inputs and outputs; the classes read those declarations back, so the
metadata MLServer reports and the checks made here come from one place. MLServer itself does
not check requests against the declared metadata, so FixtureModel does.
"""

import math

import numpy as np
from mlserver import MLModel, types
from mlserver.errors import InferenceError

NUMPY_DTYPES = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}


def flatten(data):
    """Row-major flat list of a JSON data array, which the protocol allows to be nested."""
    if isinstance(data, (list, tuple)):
        out = []
        for item in data:
            out.extend(flatten(item))
        return out
    return [data]


class FixtureModel(MLModel):
    async def load(self) -> bool:
        return True

    def tensors(self, req: types.InferenceRequest) -> dict:
        """Checks req against the declared inputs; returns name -> flat list of elements."""
        declared = {t.name: t for t in self.settings.inputs}
        names = [i.name for i in req.inputs]
        if len(names) != len(set(names)):
            raise InferenceError(f"inputs {sorted(names)} name an input more than once")
        got = {i.name: i for i in req.inputs}
        if set(got) != set(declared):
            raise InferenceError(f"inputs {sorted(got)} do not match the model's inputs {sorted(declared)}")
        out = {}
        for name, meta in declared.items():
            inp = got[name]
            dt = inp.datatype.value if hasattr(inp.datatype, "value") else str(inp.datatype)
            if dt != meta.datatype:
                raise InferenceError(f"input {name}: datatype {dt}, model expects {meta.datatype}")
            if len(inp.shape) != len(meta.shape) or any(m != -1 and m != s for m, s in zip(meta.shape, inp.shape)):
                raise InferenceError(f"input {name}: shape {inp.shape}, model expects {meta.shape}")
            if any(s < 0 for s in inp.shape):
                raise InferenceError(f"input {name}: negative dimension in shape {inp.shape}")
            root = getattr(inp.data, "root", inp.data)
            if not isinstance(root, list):
                # MLServer's TensorData also takes a bare scalar; the protocol wants an array.
                raise InferenceError(f"input {name}: data must be an array, got {type(root).__name__}")
            values = flatten(root)
            if len(values) != math.prod(inp.shape):
                raise InferenceError(f"input {name}: {len(values)} elements for shape {inp.shape}")
            out[name] = (inp.shape, values)
        return out

    def respond(self, req: types.InferenceRequest, outputs: list) -> types.InferenceResponse:
        """Builds the response, keeping only the outputs the request asked for (all if none)."""
        if req.outputs:
            by_name = {o.name: o for o in outputs}
            unknown = [o.name for o in req.outputs if o.name not in by_name]
            if unknown:
                raise InferenceError(f"unknown requested outputs {unknown}")
            outputs = [by_name[o.name] for o in req.outputs]
        return types.InferenceResponse(model_name=self.name, model_version=self.version, id=req.id, outputs=outputs)


def as_array(datatype, shape, values):
    try:
        return np.array(values, dtype=NUMPY_DTYPES[datatype]).reshape(shape)
    except (OverflowError, ValueError, TypeError) as err:
        raise InferenceError(f"cannot read {datatype} values: {err}") from None


def output(name, datatype, arr):
    # Built by hand: NumpyCodec.encode_output would turn a 1-D shape [N] into [N, 1].
    return types.ResponseOutput(name=name, shape=list(arr.shape), datatype=datatype, data=arr.flatten().tolist())


class AddSub(FixtureModel):
    async def predict(self, req: types.InferenceRequest) -> types.InferenceResponse:
        t = self.tensors(req)
        (sa, va), (sb, vb) = t["INPUT0"], t["INPUT1"]
        if sa != sb:
            raise InferenceError(f"INPUT0 shape {sa} and INPUT1 shape {sb} differ")
        a, b = as_array("INT32", sa, va), as_array("INT32", sb, vb)
        # int32 arrays wrap around on overflow, as the fixture requires.
        return self.respond(req, [output("OUTPUT0", "INT32", a + b), output("OUTPUT1", "INT32", a - b)])


class Identity(FixtureModel):
    async def predict(self, req: types.InferenceRequest) -> types.InferenceResponse:
        shape, values = self.tensors(req)["INPUT0"]
        datatype = self.settings.inputs[0].datatype
        if datatype == "BYTES":
            # Elements stay as they came: str from REST JSON, bytes from gRPC.
            out = types.ResponseOutput(name="OUTPUT0", shape=shape, datatype=datatype, data=values)
        else:
            # Through numpy so that values are rounded/checked as the declared datatype.
            out = output("OUTPUT0", datatype, as_array(datatype, shape, values))
        return self.respond(req, [out])


class Versioned(FixtureModel):
    async def predict(self, req: types.InferenceRequest) -> types.InferenceResponse:
        shape, values = self.tensors(req)["INPUT0"]
        x = as_array("INT32", shape, values)
        return self.respond(req, [output("OUTPUT0", "INT32", x + np.int32(int(self.version)))])
