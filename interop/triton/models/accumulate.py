"""accumulate: a stateful model behind Triton's sequence batcher; OUTPUT0 is the running
sum of INPUT0 over the requests of the sequence so far (int32), started at 0 by START."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()[0]
            end = pb_utils.get_input_tensor_by_name(request, "END").as_numpy()[0]
            corrid = int(pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy()[0])
            total = np.int32(0) if start else self.sums.get(corrid, np.int32(0))
            with np.errstate(over="ignore"):
                total = np.int32(total + x.astype(np.int32)[0])
            if end:
                self.sums.pop(corrid, None)
            else:
                self.sums[corrid] = total
            out = pb_utils.Tensor("OUTPUT0", np.array([total], dtype=np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
