package oip

// Well-known parameters of streaming inference (Triton's parameters
// extension). On a ModelStreamInfer stream the server flags the last
// response of a request with ParamTritonFinalResponse = true; a decoupled
// model that ends a request without a response sends an empty final
// response only when the request set ParamTritonEnableEmptyFinalResponse.
const (
	ParamTritonFinalResponse            = "triton_final_response"
	ParamTritonEnableEmptyFinalResponse = "triton_enable_empty_final_response"
)
