"""add_sub as a TorchServe custom handler, written the way TorchServe's users serve a KServe v2
model: a module-level handle() behind TorchServe's own `kservev2` request envelope
(config.properties `service_envelope=kservev2`), which parses the v2 request into a list of input
dicts and turns the list handle() returns into the v2 response. handle() computes and nothing
else: nothing here checks the request, names the outputs or builds the response. It uses numpy,
not torch: the computation needs no tensor library (the worker imports torch all the same).
"""

import numpy as np


def handle(data, context):
    if data is None:  # TorchServe calls the entry point once without data when it loads the model
        return None
    a, b = (np.asarray(t["data"], dtype=np.int32) for t in data)
    return [a + b, a - b]
