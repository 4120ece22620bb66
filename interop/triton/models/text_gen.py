"""text_gen: a decoupled text model for Triton's generate extension. It answers its text_input back:
as one response holding the whole text when the optional input `stream` is absent or false, and one
response per word (each word with the spaces that follow it) when it is true, at most the request
parameter max_tokens words (default 20), then the final flag.

A Triton model cannot tell /generate from /generate_stream: like the vLLM and TensorRT-LLM backends
(and Triton's own generate test models), it takes a `stream` input that the client sets for token
streaming (`{"text_input": …, "stream": true}` to /generate_stream); /generate accepts exactly one
response, so a model that always streamed would fail every /generate."""

import json
import re

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            stream = pb_utils.get_input_tensor_by_name(request, "stream")
            stream = stream is not None and bool(stream.as_numpy().reshape(-1)[0])
            max_tokens = int(json.loads(request.parameters()).get("max_tokens", 20))
            words = re.findall(r" *[^ ]+ *", text)[:max_tokens]
            for chunk in words if stream else ["".join(words)]:
                out = pb_utils.Tensor("text_output", np.array([chunk.encode("utf-8")], dtype=np.object_))
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
