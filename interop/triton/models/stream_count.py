"""stream_count: a decoupled model; INPUT0 = [n] gives n responses [1] ... [n], then the final flag."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            n = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()[0]
            for k in range(1, n + 1):
                out = pb_utils.Tensor("OUTPUT0", np.array([k], dtype=np.int32))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
