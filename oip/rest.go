package oip

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/tensor"
)

// REST JSON and binary-data-extension encodings of inference messages.

// ParseHeaderLength reads the Inference-Header-Content-Length values of a
// request or response whose body is bodyLen bytes long: -1 when the header is
// absent, otherwise an integer from 0 to bodyLen. It is the one parser of the
// header for the server, the client and the load generator; errors wrap
// ErrInvalid.
func ParseHeaderLength(values []string, bodyLen int) (int, error) {
	switch len(values) {
	case 0:
		return -1, nil
	case 1:
	default:
		return 0, fmt.Errorf("%w: %s given %d times", ErrInvalid, HeaderInferenceHeaderContentLength, len(values))
	}
	v := strings.TrimSpace(values[0])
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: %s %q is not an integer", ErrInvalid, HeaderInferenceHeaderContentLength, v)
	case n < 0:
		return 0, fmt.Errorf("%w: %s %q is negative", ErrInvalid, HeaderInferenceHeaderContentLength, v)
	case n > bodyLen:
		return 0, fmt.Errorf("%w: %s %q is larger than the %d-byte body", ErrInvalid, HeaderInferenceHeaderContentLength, v, bodyLen)
	}
	return n, nil
}

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
	return encodeRESTRequest(req, func(int) bool { return enc.BinaryInputs }, enc.BinaryOutputs)
}

// encodeRESTRequest is EncodeRESTRequest with the binary choice made per
// input (by index), which lets tests build mixed JSON/binary requests.
func encodeRESTRequest(req *InferRequest, binaryInput func(i int) bool, binaryOutputs bool) ([]byte, int, error) {
	if req == nil {
		return nil, 0, errors.New("encode REST request: nil request")
	}
	binary := make([]bool, len(req.Inputs))
	anyBinary := false
	hint, tailSize := 64+len(req.ID)+64*len(req.Parameters), 0
	for i := range req.Inputs {
		in := &req.Inputs[i]
		hint += 96 + len(in.Name) + 64*len(in.Parameters)
		if sharedMemoryTensor(in.Data, in.Parameters) {
			continue
		}
		if err := in.Validate(); err != nil {
			return nil, 0, fmt.Errorf("encode REST request: %w", err)
		}
		if binaryInput(i) {
			binary[i], anyBinary = true, true
			tailSize += tensor.RawSize(in.Tensor)
		} else {
			hint += jsonDataSizeHint(in.Tensor)
		}
	}
	b := make([]byte, 0, hint+tailSize)
	b = append(b, '{')
	if req.ID != "" {
		b = appendKey(b, 0, "id")
		b = tensor.AppendJSONString(b, req.ID)
	}
	var extra paramField
	if binaryOutputs {
		extra = paramField{ParamBinaryDataOutput, true}
	}
	b, err := appendParametersField(b, 0, req.Parameters, "", extra)
	if err != nil {
		return nil, 0, fmt.Errorf("encode REST request: %w", err)
	}
	b = appendKey(b, 0, "inputs")
	b = append(b, '[')
	for i := range req.Inputs {
		in := &req.Inputs[i]
		if i > 0 {
			b = append(b, ',')
		}
		var extra paramField
		if binary[i] {
			extra = paramField{ParamBinaryDataSize, int64(tensor.RawSize(in.Tensor))}
		}
		withData := !binary[i] && !sharedMemoryTensor(in.Data, in.Parameters)
		if b, err = appendRESTTensor(b, in.Tensor, in.Parameters, extra, withData); err != nil {
			return nil, 0, fmt.Errorf("encode REST request: input %q: %w", in.Name, err)
		}
	}
	b = append(b, ']')
	if len(req.Outputs) > 0 {
		b = appendKey(b, 0, "outputs")
		b = append(b, '[')
		for i, o := range req.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			start := len(b)
			b = append(b, '{')
			b = appendKey(b, start, "name")
			b = tensor.AppendJSONString(b, o.Name)
			if b, err = appendParametersField(b, start, o.Parameters, "", paramField{}); err != nil {
				return nil, 0, fmt.Errorf("encode REST request: output %q: %w", o.Name, err)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if !anyBinary {
		return b, -1, nil
	}
	headerLen := len(b)
	for i := range req.Inputs {
		if binary[i] {
			if b, err = tensor.AppendRaw(b, req.Inputs[i].Tensor); err != nil {
				return nil, 0, fmt.Errorf("encode REST request: %w", err)
			}
		}
	}
	return b, headerLen, nil
}

// appendRESTTensor appends one input or output object. binary_data_size in
// params is always dropped (it is framing the encoder controls); extra adds
// it back for binary tensors. withData writes the JSON "data" array.
func appendRESTTensor(b []byte, t tensor.Tensor, params Parameters, extra paramField, withData bool) ([]byte, error) {
	start := len(b)
	b = append(b, '{')
	b = appendKey(b, start, "name")
	b = tensor.AppendJSONString(b, t.Name)
	b = appendKey(b, start, "shape")
	b = appendShape(b, t.Shape)
	b = appendKey(b, start, "datatype")
	b = tensor.AppendJSONString(b, string(t.Datatype))
	b, err := appendParametersField(b, start, params, ParamBinaryDataSize, extra)
	if err != nil {
		return b, err
	}
	if withData {
		b = appendKey(b, start, "data")
		if b, err = tensor.AppendJSONData(b, t); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// DecodeRESTRequest parses a REST inference body. headerLen is the value of
// Inference-Header-Content-Length, or -1 when the header is absent (the whole
// body is JSON). Binary inputs (parameters.binary_data_size) take consecutive
// slices of the binary tail in input order; the sizes must add up to the tail
// exactly. Errors wrap ErrInvalid or ErrTooLarge. The returned request's
// Model and Version are empty; the caller fills them from the URL.
//
// BYTES elements of binary inputs alias body.
func DecodeRESTRequest(body []byte, headerLen int, lim Limits) (*InferRequest, error) {
	return decodeRESTRequest(body, headerLen, lim, true, false)
}

// ViewRESTRequest is DecodeRESTRequest for a body the caller keeps
// unchanged while the request, or anything made from its inputs, is in
// use: numeric binary inputs alias body instead of being copied where
// tensor.ViewRaw can view them (a little-endian host, contents aligned for
// the element type); elsewhere they are copied as DecodeRESTRequest does.
// A server saves a copy of every large binary tensor with it.
func ViewRESTRequest(body []byte, headerLen int, lim Limits) (*InferRequest, error) {
	return decodeRESTRequest(body, headerLen, lim, true, true)
}

// decodeRESTRequest is DecodeRESTRequest with the fast path (scanRequest)
// switched off when fast is false, so that tests can compare it with
// encoding/json alone, and binary inputs aliasing body when view is set
// (ViewRESTRequest). (Flags rather than a function value: passing &j to an
// unknown function would move it to the heap.)
func decodeRESTRequest(body []byte, headerLen int, lim Limits, fast, view bool) (*InferRequest, error) {
	header, tail, err := splitBody(body, headerLen, true)
	if err != nil {
		return nil, err
	}
	// j, and the first inputs in buf, stay on the stack; only the slow
	// path below escapes. The inputs are kept apart from j (inputs, not
	// j.Inputs): escape analysis does not tell j's members apart.
	var j restRequestJSON
	var buf [2]restTensorJSON
	var inputs []restTensorJSON
	ok := false
	if fast {
		inputs, ok = scanRequest(header, &j, buf[:0], lim.MaxElements)
	}
	if !ok {
		slow := new(restRequestJSON)
		if err := unmarshalHeader(header, slow); err != nil {
			return nil, err
		}
		j, inputs = *slow, slow.Inputs
	}
	if inputs == nil {
		return nil, invalidf("missing inputs")
	}
	req := newRequest(len(inputs))
	if !absent(j.ID) {
		if req.ID, err = parseString(j.ID, "id"); err != nil {
			return nil, invalidf("%w", err)
		}
	}
	if req.Parameters, err = parseParameters(j.Parameters, "parameters"); err != nil {
		return nil, invalidf("%w", err)
	}
	var small [4]restTensor // most models have a few inputs
	ts := small[:0]
	if len(inputs) > len(small) {
		ts = make([]restTensor, 0, len(inputs))
	}
	ts = ts[:len(inputs)]
	for i := range inputs {
		if err = parseRESTTensor(&inputs[i], "input", i, &ts[i]); err != nil {
			return nil, err
		}
		if lim.MaxElements > 0 && ts[i].count > lim.MaxElements {
			return nil, tooLargef("input %q: shape %v has %d elements; the limit is %d",
				ts[i].name, ts[i].shape, ts[i].count, lim.MaxElements)
		}
	}
	if len(j.Outputs) > 0 {
		req.Outputs = make([]RequestedOutput, len(j.Outputs))
		for i := range j.Outputs {
			o := &j.Outputs[i]
			if absent(o.Name) {
				return nil, invalidf("output %d: missing name", i)
			}
			name, err := parseString(o.Name, "name")
			if err != nil {
				return nil, invalidf("output %d: %w", i, err)
			}
			if name == "" {
				return nil, invalidf("output %d: name is empty", i)
			}
			p, err := parseParameters(o.Parameters, "parameters")
			if err != nil {
				return nil, invalidf("output %q: %w", name, err)
			}
			req.Outputs[i] = RequestedOutput{Name: name, Parameters: p}
		}
	}
	if err := splitBinary(ts, tail, headerLen >= 0); err != nil {
		return nil, err
	}
	for i := range ts {
		t, err := decodeTensorData(&ts[i], lim.MaxElements, view)
		if err != nil {
			return nil, invalidf("input %q: %w", ts[i].name, err)
		}
		req.Inputs[i] = InferInput{Tensor: t, Parameters: ts[i].params}
	}
	return req, nil
}

// newRequest allocates a request with n inputs (nil when n is 0), in one
// allocation when n is small, as it is for most models.
func newRequest(n int) *InferRequest {
	switch {
	case n == 0:
		return &InferRequest{}
	case n <= 2:
		r := new(struct {
			req    InferRequest
			inputs [2]InferInput
		})
		r.req.Inputs = r.inputs[:n:n]
		return &r.req
	}
	return &InferRequest{Inputs: make([]InferInput, n)}
}

// EncodeRESTResponse writes resp as a REST inference body. Outputs for which
// binary(name) is true are written as binary data after the JSON header with
// parameters.binary_data_size and no "data". headerLen is -1 when no output is
// binary.
func EncodeRESTResponse(resp *InferResponse, binary func(output string) bool) (body []byte, headerLen int, err error) {
	return AppendRESTResponse(nil, resp, binary)
}

// AppendRESTResponse is EncodeRESTResponse appending to dst, so that a
// server can encode into a reused buffer; headerLen counts from the end of
// dst's original contents.
func AppendRESTResponse(dst []byte, resp *InferResponse, binary func(output string) bool) (body []byte, headerLen int, err error) {
	origin := len(dst)
	var rawsBuf [4][]byte // no allocation for the usual few outputs
	b, raws, err := AppendRESTResponseParts(dst, rawsBuf[:0], resp, binary)
	if err != nil || raws == nil {
		return b, -1, err
	}
	headerLen = len(b) - origin
	n := 0
	for _, r := range raws {
		n += len(r)
	}
	b = slices.Grow(b, n)
	for _, r := range raws {
		b = append(b, r...)
	}
	return b, headerLen, nil
}

// AppendRESTResponseParts is AppendRESTResponse with the binary outputs
// apart: it appends the JSON header to dst and the outputs' raw bytes to
// raws (numeric data aliases the outputs on a little-endian host), so that
// a server can write header and tensors without copying the tensors. The
// raws it returns are nil when no output is binary; the body is the header
// followed by their elements.
func AppendRESTResponseParts(dst []byte, raws [][]byte, resp *InferResponse, binary func(output string) bool) (header []byte, binaries [][]byte, err error) {
	if resp == nil {
		return nil, nil, errors.New("encode REST response: nil response")
	}
	var small [8]bool
	isBinary := small[:0]
	if len(resp.Outputs) > len(small) {
		isBinary = make([]bool, 0, len(resp.Outputs))
	}
	isBinary = isBinary[:len(resp.Outputs)]
	anyBinary := false
	hint := 96 + len(resp.Model) + len(resp.Version) + len(resp.ID) + 64*len(resp.Parameters)
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		hint += 96 + len(o.Name) + 64*len(o.Parameters)
		if sharedMemoryTensor(o.Data, o.Parameters) {
			continue
		}
		if err := o.Validate(); err != nil {
			return nil, nil, fmt.Errorf("encode REST response: %w", err)
		}
		if binary != nil && binary(o.Name) {
			isBinary[i], anyBinary = true, true
		} else {
			hint += jsonDataSizeHint(o.Tensor)
		}
	}
	origin := len(dst)
	b := slices.Grow(dst, hint)
	b = append(b, '{')
	b = appendKey(b, origin, "model_name")
	b = tensor.AppendJSONString(b, resp.Model)
	if resp.Version != "" {
		b = appendKey(b, origin, "model_version")
		b = tensor.AppendJSONString(b, resp.Version)
	}
	if resp.ID != "" {
		b = appendKey(b, origin, "id")
		b = tensor.AppendJSONString(b, resp.ID)
	}
	if b, err = appendParametersField(b, origin, resp.Parameters, "", paramField{}); err != nil {
		return nil, nil, fmt.Errorf("encode REST response: %w", err)
	}
	b = appendKey(b, origin, "outputs")
	b = append(b, '[')
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		if i > 0 {
			b = append(b, ',')
		}
		var extra paramField
		if isBinary[i] {
			extra = paramField{ParamBinaryDataSize, int64(tensor.RawSize(o.Tensor))}
		}
		withData := !isBinary[i] && !sharedMemoryTensor(o.Data, o.Parameters)
		if b, err = appendRESTTensor(b, o.Tensor, o.Parameters, extra, withData); err != nil {
			return nil, nil, fmt.Errorf("encode REST response: output %q: %w", o.Name, err)
		}
	}
	b = append(b, ']', '}')
	if !anyBinary {
		return b, nil, nil
	}
	binaries = raws[:0]
	for i := range resp.Outputs {
		if isBinary[i] {
			r, err := tensor.RawBytes(resp.Outputs[i].Tensor)
			if err != nil {
				return nil, nil, fmt.Errorf("encode REST response: %w", err)
			}
			binaries = append(binaries, r)
		}
	}
	return b, binaries, nil
}

// DecodeRESTResponse parses a REST inference response body; headerLen as for
// DecodeRESTRequest. The decode is permissive where the protocol allows variation: unknown
// members are ignored and parameter values of any JSON kind are kept. Errors
// wrap ErrInvalid. BYTES elements of binary outputs alias body.
func DecodeRESTResponse(body []byte, headerLen int) (*InferResponse, error) {
	return decodeRESTResponse(body, headerLen, true)
}

// decodeRESTResponse is DecodeRESTResponse with the fast path (scanResponse)
// switched off when fast is false, as decodeRESTRequest.
func decodeRESTResponse(body []byte, headerLen int, fast bool) (*InferResponse, error) {
	header, tail, err := splitBody(body, headerLen, false)
	if err != nil {
		return nil, err
	}
	var j restResponseJSON // on the stack: only the slow path below escapes
	if !fast || !scanResponse(header, &j) {
		slow := new(restResponseJSON)
		if err := unmarshalHeader(header, slow); err != nil {
			return nil, err
		}
		j = *slow
	}
	if j.Outputs == nil {
		return nil, invalidf("missing outputs")
	}
	resp := &InferResponse{}
	for _, f := range []struct {
		raw  []byte
		name string
		dst  *string
	}{
		{j.ModelName, "model_name", &resp.Model},
		{j.ModelVersion, "model_version", &resp.Version},
		{j.ID, "id", &resp.ID},
	} {
		if !absent(f.raw) {
			if *f.dst, err = parseString(f.raw, f.name); err != nil {
				return nil, invalidf("%w", err)
			}
		}
	}
	if resp.Parameters, err = parseParameters(j.Parameters, "parameters"); err != nil {
		return nil, invalidf("%w", err)
	}
	ts := make([]restTensor, len(j.Outputs))
	for i := range j.Outputs {
		if err = parseRESTTensor(&j.Outputs[i], "output", i, &ts[i]); err != nil {
			return nil, err
		}
	}
	if err := splitBinary(ts, tail, headerLen >= 0); err != nil {
		return nil, err
	}
	if len(ts) > 0 {
		resp.Outputs = make([]InferOutput, len(ts))
	}
	for i := range ts {
		t, err := decodeTensorData(&ts[i], 0, false)
		if err != nil {
			return nil, invalidf("output %q: %w", ts[i].name, err)
		}
		resp.Outputs[i] = InferOutput{Tensor: t, Parameters: ts[i].params}
	}
	return resp, nil
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
