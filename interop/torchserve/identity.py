"""identity_<t> as a TorchServe custom handler behind the `kservev2` envelope (see add_sub.py):
returns its input, read as the datatype the request declares."""

import numpy as np

NUMPY = {
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
    "BYTES": np.object_,
}


def handle(data, context):
    if data is None:  # TorchServe calls the entry point once without data when it loads the model
        return None
    return [np.asarray(t["data"], dtype=NUMPY[t["datatype"]]) for t in data]
