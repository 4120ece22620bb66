package oip

// REST JSON and binary-data-extension encodings of inference messages.

// RESTEncoding chooses how a request is written.
type RESTEncoding struct {
	// BinaryInputs sends every input as binary data after the JSON header
	// (binary_data_size on each input) instead of a JSON "data" array.
	BinaryInputs bool
	// BinaryOutputs sets binary_data_output on the request so the server
	// returns every output as binary data (unless a requested output sets
	// binary_data itself).
	BinaryOutputs bool
}

// EncodeRESTRequest writes req as a REST inference body. headerLen is the
// length of the JSON part when the body carries binary data (to be sent as
// Inference-Header-Content-Length), and -1 for a pure JSON body. Model and
// Version are not part of the body; they belong in the URL.
func EncodeRESTRequest(req *InferRequest, enc RESTEncoding) (body []byte, headerLen int, err error) {
	panic("TODO")
}

// DecodeRESTRequest parses a REST inference body. headerLen is the value of
// Inference-Header-Content-Length, or -1 when the header is absent (the whole
// body is JSON). Binary inputs (parameters.binary_data_size) take consecutive
// slices of the binary tail in input order; the sizes must add up to the tail
// exactly. Errors wrap ErrInvalid or ErrTooLarge. The returned request's
// Model and Version are empty; the caller fills them from the URL.
func DecodeRESTRequest(body []byte, headerLen int, lim Limits) (*InferRequest, error) {
	panic("TODO")
}

// EncodeRESTResponse writes resp as a REST inference body. Outputs for which
// binary(name) is true are written as binary data after the JSON header with
// parameters.binary_data_size and no "data". headerLen is -1 when no output is
// binary.
func EncodeRESTResponse(resp *InferResponse, binary func(output string) bool) (body []byte, headerLen int, err error) {
	panic("TODO")
}

// DecodeRESTResponse parses a REST inference response body; headerLen as for
// DecodeRESTRequest.
func DecodeRESTResponse(body []byte, headerLen int) (*InferResponse, error) {
	panic("TODO")
}

// BinaryOutput reports whether the REST binary-data extension asks for output
// name to be returned as binary data: the requested output's binary_data
// parameter when set, else the request's binary_data_output.
func (r *InferRequest) BinaryOutput(name string) bool {
	for _, o := range r.Outputs {
		if o.Name == name {
			if v, ok := o.Parameters.Bool(ParamBinaryData); ok {
				return v
			}
		}
	}
	v, _ := r.Parameters.Bool(ParamBinaryDataOutput)
	return v
}
