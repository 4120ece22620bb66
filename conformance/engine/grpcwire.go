package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// PBRequest builds a ModelInferRequest carrying ts as typed contents, or as
// raw_input_contents when raw is set, with the project's one gRPC encoder.
// FP16/BF16 are always raw, the only form they have (OIP-GRPC-INFER-011).
// The suite's own tensors always encode. It carries the suite's id
// ([RequestID]).
func PBRequest(model string, raw bool, ts ...tensor.Tensor) *pb.ModelInferRequest {
	req := &oip.InferRequest{Model: model, ID: RequestID}
	for _, t := range ts {
		req.Inputs = append(req.Inputs, oip.InferInput{Tensor: t})
	}
	m, err := oip.ToProtoRequest(req, raw)
	if err != nil {
		panic(fmt.Sprintf("conformance: encode %s request: %v", model, err))
	}
	return m
}

// PBOutput decodes output name from typed or raw contents (A-24: either
// form is allowed, matched by name, never by position).
func PBOutput(resp *pb.ModelInferResponse, name string) (tensor.Tensor, error) {
	var names []string
	same := 0
	for _, o := range resp.GetOutputs() {
		names = append(names, o.GetName())
		if o.GetName() == name {
			same++
		}
	}
	if same > 1 {
		return tensor.Tensor{}, fmt.Errorf("output %q appears %d times (outputs: %v)", name, same, names)
	}
	for i, o := range resp.GetOutputs() {
		if o.GetName() != name {
			continue
		}
		d, err := tensor.ParseDatatype(o.GetDatatype())
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("output %q: %v", name, err)
		}
		for _, dim := range o.GetShape() {
			if dim < 0 {
				return tensor.Tensor{}, fmt.Errorf("output %q: shape %v has a negative dimension", name, o.GetShape())
			}
		}
		if raw := resp.GetRawOutputContents(); len(raw) > 0 {
			if i >= len(raw) {
				return tensor.Tensor{}, fmt.Errorf("output %q is outputs[%d] but raw_output_contents has %d entries", name, i, len(raw))
			}
			t, err := tensor.DecodeRaw(name, d, o.GetShape(), raw[i])
			if err != nil {
				return tensor.Tensor{}, fmt.Errorf("output %q: raw contents: %v", name, err)
			}
			return t, nil
		}
		t, err := tensor.FromContents(name, d, o.GetShape(), o.GetContents())
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("output %q: contents: %v", name, err)
		}
		return t, nil
	}
	return tensor.Tensor{}, fmt.Errorf("output %q is missing (outputs: %v)", name, names)
}

// rawFormErr checks the response-side raw rule (OIP-GRPC-RAW-007): when
// raw_output_contents is used it has one entry per output and no output sets
// contents; each raw entry has the byte size its shape implies.
func rawFormErr(resp *pb.ModelInferResponse) error {
	raw := resp.GetRawOutputContents()
	if len(raw) == 0 {
		return nil
	}
	var list []error
	if len(raw) != len(resp.GetOutputs()) {
		list = append(list, fmt.Errorf("raw_output_contents has %d entries for %d outputs", len(raw), len(resp.GetOutputs())))
	}
	for i, o := range resp.GetOutputs() {
		if o.GetContents() != nil {
			list = append(list, fmt.Errorf("output %q sets contents although raw_output_contents is used", o.GetName()))
		}
		d := tensor.Datatype(o.GetDatatype())
		if i < len(raw) && d.Size() > 0 {
			if n, err := tensor.ElementCount(o.GetShape()); err == nil && int64(len(raw[i])) != n*int64(d.Size()) {
				list = append(list, fmt.Errorf("raw_output_contents[%d] (%q) is %d bytes, want %d for shape %v of %s", i, o.GetName(), len(raw[i]), n*int64(d.Size()), o.GetShape(), d))
			}
		}
	}
	return errs(list...)
}

// emptyResponse describes an OK response that carries no result.
func emptyResponse(m proto.Message) string {
	switch r := m.(type) {
	case *pb.ModelInferResponse:
		if len(r.GetOutputs()) == 0 {
			return "no outputs"
		}
	case *pb.ModelMetadataResponse:
		if r.GetName() == "" {
			return "no model name"
		}
	}
	return ""
}

// unknownFields reports fields a message carried that the OIP proto does not
// define, a sign of a different wire layout (OIP-GEN-007).
func unknownFields(m proto.Message) error {
	if m == nil {
		return nil
	}
	var list []error
	var walk func(path string, m proto.Message)
	walk = func(path string, m proto.Message) {
		r := m.ProtoReflect()
		if u := r.GetUnknown(); len(u) > 0 {
			list = append(list, fmt.Errorf("%s carries %d bytes of fields unknown to the OIP proto", path, len(u)))
		}
		for _, o := range outputsOf(m) {
			walk(path+".outputs["+o.GetName()+"]", o)
		}
	}
	walk(string(m.ProtoReflect().Descriptor().Name()), m)
	return errs(list...)
}

func outputsOf(m proto.Message) []*pb.ModelInferResponse_InferOutputTensor {
	if r, ok := m.(*pb.ModelInferResponse); ok {
		return r.GetOutputs()
	}
	return nil
}

// ----- ModelMetadata, read tolerantly -----

// rawReply receives a reply's bytes undecoded (see rawCodec).
type rawReply struct{ b []byte }

// rawCodec marshals requests with protobuf and hands the reply over as
// bytes, so that the suite can look at the wire layout itself. Its name is
// the default codec's, so the content-type stays application/grpc+proto.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*rawReply)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	r.b = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// fieldProperties is ModelMetadataResponse.properties, map<string, string>
// (OIP-PROTO only, catalog §4.2).
const fieldProperties = 6

// modelMetadata calls ModelMetadata and decodes the answer tolerantly,
// as OIP-GRPC-META-003 asks: when field 6 is not OIP-PROTO's
// map<string, string> properties, fields 1-5 are still read, and wire says
// precisely what field 6 holds. err is the call's status; a reply that
// cannot be read at all becomes the INTERNAL status grpc-go would have made
// up, so that it counts as no usable answer.
func (t *Target) modelMetadata(ctx context.Context, req *pb.ModelMetadataRequest) *Call {
	c := &Call{Method: methodPrefix + "ModelMetadata", Req: req}
	route := grpcRoute(c.Method)
	if c.Err = t.routes.check(route); c.Err != nil {
		return c
	}
	cctx, cancel := t.grpc.Context(ctx)
	defer cancel()
	var raw rawReply
	if c.Err = t.grpc.Conn().Invoke(cctx, c.Method, req, &raw, grpc.ForceCodecV2(rawCodec{})); c.Err != nil {
		if isTimeout(c.Err) {
			t.routes.timedOut(route, c.Err)
		}
		return c
	}
	resp, wire, derr := decodeModelMetadata(raw.b)
	if derr != nil {
		c.Err = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received response: %v", derr)
		return c
	}
	c.Resp, c.Wire = resp, wire
	return c
}

// ModelMetadata calls ModelMetadata for a spec and decodes the answer
// tolerantly (see the Target method): c.Wire says what field 6 holds when it
// is not OIP-PROTO's properties. The call is evidence and counts toward the
// server still answering.
func ModelMetadata(ctx context.Context, req *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, *Call) {
	c := current.modelMetadata(ctx, req)
	current.specGate(c.Err, c.Method, true)
	resp, _ := c.Resp.(*pb.ModelMetadataResponse)
	return resp, c
}

// decodeModelMetadata decodes b as OIP-PROTO's ModelMetadataResponse. When
// that fails, it decodes b again without field 6 and reports field 6 in
// wire; when it succeeds, wire still reports property values that are
// protobuf messages rather than strings. err means b cannot be read at all.
func decodeModelMetadata(b []byte) (m *pb.ModelMetadataResponse, wire, err error) {
	m = &pb.ModelMetadataResponse{}
	strict := proto.Unmarshal(b, m)
	if strict == nil {
		return m, propertiesLayout(b, nil), nil
	}
	m = &pb.ModelMetadataResponse{}
	if err := proto.Unmarshal(withoutField(b, fieldProperties), m); err != nil {
		return nil, nil, strict
	}
	return m, propertiesLayout(b, strict), nil
}

// record is one top-level field of a protobuf message as it is on the wire.
type record struct {
	num   protowire.Number
	typ   protowire.Type
	whole []byte // tag and value
	value []byte // the contents of a length-delimited value, else nil
}

// records splits a message into its top-level fields; ok is false when b
// does not parse as protobuf.
func records(b []byte) (rs []record, ok bool) {
	for len(b) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return rs, false
		}
		valLen := protowire.ConsumeFieldValue(n, typ, b[tagLen:])
		if valLen < 0 {
			return rs, false
		}
		r := record{num: n, typ: typ, whole: b[:tagLen+valLen]}
		if typ == protowire.BytesType {
			r.value, _ = protowire.ConsumeBytes(b[tagLen:])
		}
		rs = append(rs, r)
		b = b[tagLen+valLen:]
	}
	return rs, true
}

// withoutField returns b with every record of field num removed; b is
// returned unchanged if it does not parse.
func withoutField(b []byte, num protowire.Number) []byte {
	rs, ok := records(b)
	if !ok {
		return b
	}
	out := make([]byte, 0, len(b))
	for _, r := range rs {
		if r.num != num {
			out = append(out, r.whole...)
		}
	}
	return out
}

// propertiesLayout describes field 6 when it is not map<string, string>:
// the strict decoding error, if any, and each entry whose value is not a
// string or is an InferParameter message (map<string, InferParameter>, the
// "parameters" some servers' protos declare as field 6) — a value that
// happens to be valid UTF-8 decodes as a string, silently wrong.
func propertiesLayout(b []byte, strict error) error {
	var list []error
	if strict != nil {
		list = append(list, fmt.Errorf("ModelMetadataResponse does not decode with OIP-PROTO (%v); fields 1-5 decode without field 6", strict))
	}
	rs, _ := records(b)
	for _, r := range rs {
		switch {
		case r.num != fieldProperties:
		case r.typ != protowire.BytesType:
			list = append(list, fmt.Errorf("field 6 has wire type %d; OIP-PROTO declares map<string, string> properties (length-delimited entries)", r.typ))
		default:
			if err := propertyEntryErr(r.value); err != nil {
				list = append(list, err)
			}
		}
	}
	if len(list) > 0 && strict == nil {
		list = append([]error{errors.New("ModelMetadataResponse field 6 is not OIP-PROTO's map<string, string> properties")}, list...)
	}
	return errs(list...)
}

// propertyEntryErr checks one map entry of field 6: key (1) and value (2)
// must be strings.
func propertyEntryErr(entry []byte) error {
	rs, ok := records(entry)
	if !ok {
		return fmt.Errorf("field 6 entry %s is not a map entry", hexClip(entry, 64))
	}
	var key, value []byte
	for _, r := range rs {
		if r.num != 1 && r.num != 2 {
			continue
		}
		if r.typ != protowire.BytesType {
			return fmt.Errorf("field 6 entry: field %d has wire type %d, want a string", r.num, r.typ)
		}
		if r.num == 1 {
			key = r.value
		} else {
			value = r.value
		}
	}
	if !utf8.Valid(key) {
		return fmt.Errorf("field 6 entry key %s is not a UTF-8 string", hexClip(key, 64))
	}
	var p pb.InferParameter
	if looksLikeMessage(value) && proto.Unmarshal(value, &p) == nil && p.GetParameterChoice() != nil && len(p.ProtoReflect().GetUnknown()) == 0 {
		return fmt.Errorf("properties[%q] holds bytes %s, which are the protobuf message InferParameter{%s}, not a string: field 6 is map<string, InferParameter>",
			key, hexClip(value, 64), strings.TrimSuffix(strings.TrimPrefix(protoText(&p), "{"), "}"))
	}
	if !utf8.Valid(value) {
		return fmt.Errorf("properties[%q] holds bytes %s, which are not a UTF-8 string", key, hexClip(value, 64))
	}
	return nil
}

// looksLikeMessage reports a value that starts with a control byte, as
// every protobuf message with a field numbered below 4 does and no
// reasonable property string does.
func looksLikeMessage(b []byte) bool { return len(b) > 0 && b[0] < 0x20 }
