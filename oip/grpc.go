package oip

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// gRPC encodings of inference messages.

// ToProtoRequest converts req to a ModelInferRequest, with tensor data in
// raw_input_contents when raw is true and in typed contents otherwise. FP16
// and BF16 inputs force raw, since they have no typed field.
func ToProtoRequest(req *InferRequest, raw bool) (*inferencepb.ModelInferRequest, error) {
	if req == nil {
		return nil, errors.New("encode gRPC request: nil request")
	}
	pb := &inferencepb.ModelInferRequest{ModelName: req.Model, ModelVersion: req.Version, Id: req.ID}
	var err error
	if pb.Parameters, err = ParametersToProto(req.Parameters); err != nil {
		return nil, fmt.Errorf("encode gRPC request: %w", err)
	}
	useRaw := raw
	inMessage := 0 // inputs whose data the message carries (not in shared memory)
	for i := range req.Inputs {
		useRaw = useRaw || needsRaw(req.Inputs[i].Datatype)
		if !sharedMemoryTensor(req.Inputs[i].Data, req.Inputs[i].Parameters) {
			inMessage++
		}
	}
	if len(req.Inputs) > 0 {
		pb.Inputs = make([]*inferencepb.ModelInferRequest_InferInputTensor, len(req.Inputs))
		if useRaw && inMessage > 0 {
			// One entry per input that the message carries, as Triton's
			// clients send: inputs in shared memory have none.
			pb.RawInputContents = make([][]byte, 0, inMessage)
		}
	}
	for i := range req.Inputs {
		in := &req.Inputs[i]
		shm := sharedMemoryTensor(in.Data, in.Parameters)
		if !shm {
			if err := in.Validate(); err != nil {
				return nil, fmt.Errorf("encode gRPC request: %w", err)
			}
		}
		t := &inferencepb.ModelInferRequest_InferInputTensor{
			Name:     in.Name,
			Datatype: string(in.Datatype),
			Shape:    slices.Clone(in.Shape),
		}
		if t.Parameters, err = ParametersToProto(in.Parameters); err != nil {
			return nil, fmt.Errorf("encode gRPC request: input %q: %w", in.Name, err)
		}
		switch {
		case shm:
		case useRaw:
			var r []byte
			r, err = tensor.EncodeRaw(in.Tensor)
			pb.RawInputContents = append(pb.RawInputContents, r)
		default:
			t.Contents, err = tensor.ToContents(in.Tensor)
		}
		if err != nil {
			return nil, fmt.Errorf("encode gRPC request: input %q: %w", in.Name, err)
		}
		pb.Inputs[i] = t
	}
	if len(req.Outputs) > 0 {
		pb.Outputs = make([]*inferencepb.ModelInferRequest_InferRequestedOutputTensor, len(req.Outputs))
	}
	for i, o := range req.Outputs {
		p, err := ParametersToProto(o.Parameters)
		if err != nil {
			return nil, fmt.Errorf("encode gRPC request: output %q: %w", o.Name, err)
		}
		pb.Outputs[i] = &inferencepb.ModelInferRequest_InferRequestedOutputTensor{Name: o.Name, Parameters: p}
	}
	return pb, nil
}

// FromProtoRequest converts a ModelInferRequest. It enforces the raw-contents
// rules: raw_input_contents and typed contents are mutually exclusive, there
// is one raw entry per input in input order, and every size matches its
// shape. usedRaw reports which form the request used. Errors wrap ErrInvalid
// or ErrTooLarge.
//
// The request aliases pb (shapes, typed contents, raw contents of every
// datatype when aligned, as protobuf's decoder allocates them): pb must not
// change while req is in use.
func FromProtoRequest(pb *inferencepb.ModelInferRequest, lim Limits) (req *InferRequest, usedRaw bool, err error) {
	if pb == nil {
		return nil, false, invalidf("nil request")
	}
	raw := pb.GetRawInputContents()
	usedRaw = len(raw) > 0
	var shm []bool // inputs in shared memory, when any
	if shm, raw, err = sharedMemoryInputs(pb.GetInputs(), raw); err != nil {
		return nil, false, err
	}
	if err := checkRawForm(raw, len(pb.GetInputs()), "input", func(i int) (string, bool) {
		in := pb.GetInputs()[i]
		return in.GetName(), in.GetContents() != nil
	}); err != nil {
		return nil, false, err
	}
	req = &InferRequest{
		Model:      pb.GetModelName(),
		Version:    pb.GetModelVersion(),
		ID:         pb.GetId(),
		Parameters: ParametersFromProto(pb.GetParameters()),
	}
	if n := len(pb.GetInputs()); n > 0 {
		req.Inputs = make([]InferInput, n)
	}
	for i, in := range pb.GetInputs() {
		var r []byte
		if usedRaw {
			r = raw[i]
		}
		inShm := shm != nil && shm[i]
		t, err := fromProtoTensor("input", i, in.GetName(), in.GetDatatype(), in.GetShape(), in.GetContents(), r, usedRaw && !inShm, inShm, lim)
		if err != nil {
			return nil, false, err
		}
		req.Inputs[i] = InferInput{Tensor: t, Parameters: ParametersFromProto(in.GetParameters())}
	}
	if n := len(pb.GetOutputs()); n > 0 {
		req.Outputs = make([]RequestedOutput, n)
	}
	for i, o := range pb.GetOutputs() {
		if o.GetName() == "" {
			return nil, false, invalidf("output %d: missing name", i)
		}
		req.Outputs[i] = RequestedOutput{Name: o.GetName(), Parameters: ParametersFromProto(o.GetParameters())}
	}
	return req, usedRaw, nil
}

// ToProtoResponse converts resp to a ModelInferResponse, with data in
// raw_output_contents when raw is true and typed contents otherwise (FP16 and
// BF16 outputs force raw for the whole response, since the two forms are
// exclusive). The message aliases resp's shapes and numeric data (the
// server's hot path: no copy before marshalling): resp must not change
// until the message is marshalled.
func ToProtoResponse(resp *InferResponse, raw bool) (*inferencepb.ModelInferResponse, error) {
	return toProtoResponse(resp, raw, nil)
}

func toProtoResponse(resp *InferResponse, raw bool, reuse [][]byte) (*inferencepb.ModelInferResponse, error) {
	if resp == nil {
		return nil, errors.New("encode gRPC response: nil response")
	}
	pb := &inferencepb.ModelInferResponse{ModelName: resp.Model, ModelVersion: resp.Version, Id: resp.ID}
	var err error
	if pb.Parameters, err = ParametersToProto(resp.Parameters); err != nil {
		return nil, fmt.Errorf("encode gRPC response: %w", err)
	}
	useRaw := raw
	for i := range resp.Outputs {
		useRaw = useRaw || needsRaw(resp.Outputs[i].Datatype)
	}
	var outputs []inferencepb.ModelInferResponse_InferOutputTensor // one allocation for all
	if len(resp.Outputs) > 0 {
		pb.Outputs = make([]*inferencepb.ModelInferResponse_InferOutputTensor, len(resp.Outputs))
		outputs = make([]inferencepb.ModelInferResponse_InferOutputTensor, len(resp.Outputs))
		if useRaw {
			pb.RawOutputContents = make([][]byte, len(resp.Outputs))
		}
	}
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		// An output written to shared memory has no contents; in raw form
		// it keeps an empty entry, so that raw_output_contents stays one
		// entry per output (clients index it by output position).
		shm := sharedMemoryTensor(o.Data, o.Parameters)
		if !shm {
			if err := o.Validate(); err != nil {
				return nil, fmt.Errorf("encode gRPC response: %w", err)
			}
		}
		t := &outputs[i]
		t.Name, t.Datatype, t.Shape = o.Name, string(o.Datatype), o.Shape
		if t.Parameters, err = ParametersToProto(o.Parameters); err != nil {
			return nil, fmt.Errorf("encode gRPC response: output %q: %w", o.Name, err)
		}
		switch {
		case shm:
			if useRaw {
				pb.RawOutputContents[i] = []byte{}
			}
		case useRaw:
			if v, ok := o.Data.([][]byte); ok && o.Datatype == tensor.Bytes {
				if r := framedRaw(v, reuse); r != nil {
					pb.RawOutputContents[i] = r
					break
				}
			}
			pb.RawOutputContents[i], err = tensor.RawBytes(o.Tensor)
		default:
			t.Contents, err = tensor.ToContents(o.Tensor)
		}
		if err != nil {
			return nil, fmt.Errorf("encode gRPC response: output %q: %w", o.Name, err)
		}
		pb.Outputs[i] = t
	}
	return pb, nil
}

// FromProtoResponse converts a ModelInferResponse, accepting data in either
// raw_output_contents or typed contents (never both; an empty contents
// message beside raw data is tolerated). Errors wrap ErrInvalid.
// The response aliases pb, as FromProtoRequest's request does.
func FromProtoResponse(pb *inferencepb.ModelInferResponse) (*InferResponse, error) {
	if pb == nil {
		return nil, invalidf("nil response")
	}
	raw := pb.GetRawOutputContents()
	usedRaw := len(raw) > 0
	if err := checkRawForm(raw, len(pb.GetOutputs()), "output", func(i int) (string, bool) {
		// An empty contents message next to raw data holds nothing that
		// could contradict it (MLServer 1.7.1 sends one with every raw
		// output): the data is unambiguous, so a client reads it. Contents
		// with values stay an error.
		o := pb.GetOutputs()[i]
		return o.GetName(), o.GetContents() != nil && contentsLen(o.GetContents()) > 0
	}); err != nil {
		return nil, err
	}
	resp := &InferResponse{
		Model:      pb.GetModelName(),
		Version:    pb.GetModelVersion(),
		ID:         pb.GetId(),
		Parameters: ParametersFromProto(pb.GetParameters()),
	}
	if n := len(pb.GetOutputs()); n > 0 {
		resp.Outputs = make([]InferOutput, n)
	}
	for i, o := range pb.GetOutputs() {
		var r []byte
		if usedRaw {
			r = raw[i]
		}
		_, inShm := o.GetParameters()[ParamSharedMemoryRegion]
		inShm = inShm && len(r) == 0 && contentsLen(o.GetContents()) == 0
		t, err := fromProtoTensor("output", i, o.GetName(), o.GetDatatype(), o.GetShape(), o.GetContents(), r, usedRaw && !inShm, inShm, Limits{})
		if err != nil {
			return nil, err
		}
		resp.Outputs[i] = InferOutput{Tensor: t, Parameters: ParametersFromProto(o.GetParameters())}
	}
	return resp, nil
}

// needsRaw reports datatypes that have no typed contents field.
func needsRaw(d tensor.Datatype) bool { return d == tensor.FP16 || d == tensor.BF16 }

// checkRawForm enforces the raw-contents rules when raw is used: one entry
// per tensor and no typed contents anywhere.
// kind is "input" or "output"; contents(i) returns tensor i's name and
// whether it has typed contents.
func checkRawForm(raw [][]byte, n int, kind string, contents func(i int) (string, bool)) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) != n {
		return invalidf("%d raw_%s_contents for %d %ss", len(raw), kind, n, kind)
	}
	for i := range n {
		if name, has := contents(i); has {
			return invalidf("%s %q: raw_%s_contents and contents are mutually exclusive", kind, name, kind)
		}
	}
	return nil
}

// fromProtoTensor checks and decodes one input or output. Shapes and counts
// are checked (and the element limit applied) before any data is decoded.
func fromProtoTensor(kind string, i int, name, datatype string, shape []int64, c *inferencepb.InferTensorContents, raw []byte, useRaw, inShm bool, lim Limits) (tensor.Tensor, error) {
	if name == "" {
		return tensor.Tensor{}, invalidf("%s %d: missing name", kind, i)
	}
	d, err := tensor.ParseDatatype(datatype)
	if err != nil {
		return tensor.Tensor{}, invalidf("%s %q: %v", kind, name, err)
	}
	count, err := tensor.ElementCount(shape)
	if err != nil {
		return tensor.Tensor{}, invalidf("%s %q: %v", kind, name, err)
	}
	if lim.MaxElements > 0 && count > lim.MaxElements {
		return tensor.Tensor{}, tooLargef("%s %q: shape %v has %d elements; the limit is %d", kind, name, shape, count, lim.MaxElements)
	}
	if inShm {
		return tensor.Tensor{Name: name, Datatype: d, Shape: shape}, nil
	}
	if useRaw {
		t, err := tensor.ViewRaw(name, d, shape, raw)
		if err != nil {
			return tensor.Tensor{}, invalidf("%s %q: %w", kind, name, err)
		}
		return t, nil
	}
	if needsRaw(d) {
		return tensor.Tensor{}, invalidf("%s %q: %s data must use raw_%s_contents", kind, name, d, kind)
	}
	if c == nil {
		c = &inferencepb.InferTensorContents{}
	}
	// The contents are already in memory; refusing a count they cannot
	// satisfy keeps a hostile shape from sizing any allocation.
	if held := contentsLen(c); count > int64(held) {
		return tensor.Tensor{}, invalidf("%s %q: shape %v needs %d elements, contents hold %d", kind, name, shape, count, held)
	}
	t, err := tensor.FromContents(name, d, shape, c)
	if err != nil {
		return tensor.Tensor{}, invalidf("%s %q: %w", kind, name, err)
	}
	return t, nil
}

// contentsLen is the number of values in all typed fields of c.
func contentsLen(c *inferencepb.InferTensorContents) int {
	return len(c.GetBoolContents()) + len(c.GetIntContents()) + len(c.GetInt64Contents()) +
		len(c.GetUintContents()) + len(c.GetUint64Contents()) + len(c.GetFp32Contents()) +
		len(c.GetFp64Contents()) + len(c.GetBytesContents())
}

// ParametersToProto converts parameters to the gRPC map; unsupported value
// kinds are an error. bool, int64 (and int), uint64, float64 (and float32)
// and string are supported. Empty parameters give a nil map.
func ParametersToProto(p Parameters) (map[string]*inferencepb.InferParameter, error) {
	if len(p) == 0 {
		return nil, nil
	}
	m := make(map[string]*inferencepb.InferParameter, len(p))
	for k, v := range p {
		var c *inferencepb.InferParameter
		switch v := v.(type) {
		case bool:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: v}}
		case int64:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: v}}
		case int:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: int64(v)}}
		case uint64:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Uint64Param{Uint64Param: v}}
		case float64:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: v}}
		case float32:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: float64(v)}}
		case string:
			c = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: v}}
		default:
			return nil, fmt.Errorf("parameter %q has type %T; want bool, int64, uint64, float64 or string", k, v)
		}
		m[k] = c
	}
	return m, nil
}

// ParametersFromProto converts the gRPC parameter map. Entries with no value
// set are skipped; an empty map gives nil.
func ParametersFromProto(m map[string]*inferencepb.InferParameter) Parameters {
	if len(m) == 0 {
		return nil
	}
	p := make(Parameters, len(m))
	for k, v := range m {
		switch c := v.GetParameterChoice().(type) {
		case *inferencepb.InferParameter_BoolParam:
			p[k] = c.BoolParam
		case *inferencepb.InferParameter_Int64Param:
			p[k] = c.Int64Param
		case *inferencepb.InferParameter_Uint64Param:
			p[k] = c.Uint64Param
		case *inferencepb.InferParameter_DoubleParam:
			p[k] = c.DoubleParam
		case *inferencepb.InferParameter_StringParam:
			p[k] = c.StringParam
		}
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// ServerMetadataToProto converts server metadata to a ServerMetadataResponse.
func ServerMetadataToProto(m *ServerMetadata) *inferencepb.ServerMetadataResponse {
	if m == nil {
		return &inferencepb.ServerMetadataResponse{}
	}
	return &inferencepb.ServerMetadataResponse{
		Name:       m.Name,
		Version:    m.Version,
		Extensions: slices.Clone(m.Extensions),
	}
}

// ServerMetadataFromProto converts a ServerMetadataResponse. Extensions is
// never nil, so that it encodes as a JSON array.
func ServerMetadataFromProto(pb *inferencepb.ServerMetadataResponse) *ServerMetadata {
	return &ServerMetadata{
		Name:       pb.GetName(),
		Version:    pb.GetVersion(),
		Extensions: append([]string{}, pb.GetExtensions()...),
	}
}

// ModelMetadataToProto converts model metadata to a ModelMetadataResponse.
func ModelMetadataToProto(m *ModelMetadata) *inferencepb.ModelMetadataResponse {
	if m == nil {
		return &inferencepb.ModelMetadataResponse{}
	}
	pb := &inferencepb.ModelMetadataResponse{
		Name:     m.Name,
		Versions: slices.Clone(m.Versions),
		Platform: m.Platform,
		Inputs:   tensorMetadataToProto(m.Inputs),
		Outputs:  tensorMetadataToProto(m.Outputs),
	}
	if len(m.Properties) > 0 {
		pb.Properties = maps.Clone(m.Properties)
	}
	return pb
}

// ModelMetadataFromProto converts a ModelMetadataResponse. Inputs, Outputs
// and every Shape are never nil, so that they encode as JSON arrays; the
// datatypes are not checked (metadata may name types this package does not
// know, and callers that validate want to see them).
func ModelMetadataFromProto(pb *inferencepb.ModelMetadataResponse) *ModelMetadata {
	m := &ModelMetadata{
		Name:     pb.GetName(),
		Versions: slices.Clone(pb.GetVersions()),
		Platform: pb.GetPlatform(),
		Inputs:   tensorMetadataFromProto(pb.GetInputs()),
		Outputs:  tensorMetadataFromProto(pb.GetOutputs()),
	}
	if len(pb.GetProperties()) > 0 {
		m.Properties = maps.Clone(pb.GetProperties())
	}
	return m
}

func tensorMetadataToProto(ts []TensorMetadata) []*inferencepb.ModelMetadataResponse_TensorMetadata {
	if len(ts) == 0 {
		return nil
	}
	pb := make([]*inferencepb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		pb[i] = &inferencepb.ModelMetadataResponse_TensorMetadata{
			Name:     t.Name,
			Datatype: string(t.Datatype),
			Shape:    slices.Clone(t.Shape),
		}
	}
	return pb
}

func tensorMetadataFromProto(pb []*inferencepb.ModelMetadataResponse_TensorMetadata) []TensorMetadata {
	ts := make([]TensorMetadata, len(pb))
	for i, t := range pb {
		ts[i] = TensorMetadata{
			Name:     t.GetName(),
			Datatype: tensor.Datatype(t.GetDatatype()),
			Shape:    append([]int64{}, t.GetShape()...),
		}
	}
	return ts
}

// sharedMemoryInputs finds the inputs whose data is in shared memory (shm is
// nil when none is) and checks that they carry no contents. raw_input_contents
// may hold one entry per input (empty for inputs in shared memory) or one per
// input the message carries, as Triton's clients send; the second form is
// spread to the first.
func sharedMemoryInputs(inputs []*inferencepb.ModelInferRequest_InferInputTensor, raw [][]byte) (shm []bool, full [][]byte, err error) {
	n := 0
	for _, in := range inputs {
		if _, ok := in.GetParameters()[ParamSharedMemoryRegion]; ok {
			n++
		}
	}
	if n == 0 {
		return nil, raw, nil
	}
	shm = make([]bool, len(inputs))
	for i, in := range inputs {
		if _, ok := in.GetParameters()[ParamSharedMemoryRegion]; !ok {
			continue
		}
		shm[i] = true
		if in.GetContents() != nil {
			return nil, nil, invalidf("input %q: both contents and %s are set; a tensor in shared memory carries no data", in.GetName(), ParamSharedMemoryRegion)
		}
	}
	switch len(raw) {
	case 0:
		return shm, raw, nil
	case len(inputs):
		for i := range inputs {
			if shm[i] && len(raw[i]) > 0 {
				return nil, nil, invalidf("input %q: both raw_input_contents and %s are set; a tensor in shared memory carries no data", inputs[i].GetName(), ParamSharedMemoryRegion)
			}
		}
		return shm, raw, nil
	case len(inputs) - n:
		full = make([][]byte, len(inputs))
		j := 0
		for i := range inputs {
			if !shm[i] {
				full[i] = raw[j]
				j++
			}
		}
		return shm, full, nil
	}
	return nil, nil, invalidf("%d raw_input_contents for %d inputs, %d of them in shared memory", len(raw), len(inputs), n)
}
