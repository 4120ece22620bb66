"""param_echo: OUTPUT0 holds the request parameter `echo` as Triton hands it to the model
(request.parameters(), a JSON object); INPUT0 is not read."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            echo = json.loads(request.parameters()).get("echo", "")
            out = pb_utils.Tensor("OUTPUT0", np.array([str(echo).encode()], dtype=np.object_))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
