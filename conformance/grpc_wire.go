package conformance

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// pbRequest builds a ModelInferRequest carrying ts as typed contents, or as
// raw_input_contents when raw is set. FP16/BF16 are always raw, the only form
// they have (OIP-GRPC-INFER-011). The suite's own tensors always encode.
func pbRequest(model string, raw bool, ts ...tensor.Tensor) *pb.ModelInferRequest {
	req := &pb.ModelInferRequest{ModelName: model}
	for _, t := range ts {
		if t.Datatype == tensor.FP16 || t.Datatype == tensor.BF16 {
			raw = true
		}
	}
	for _, t := range ts {
		in := &pb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: string(t.Datatype), Shape: t.Shape}
		if raw {
			b, err := tensor.EncodeRaw(t)
			if err != nil {
				panic(fmt.Sprintf("conformance: encode %s: %v", t.Name, err))
			}
			req.RawInputContents = append(req.RawInputContents, b)
		} else {
			c, err := tensor.ToContents(t)
			if err != nil {
				panic(fmt.Sprintf("conformance: contents of %s: %v", t.Name, err))
			}
			in.Contents = c
		}
		req.Inputs = append(req.Inputs, in)
	}
	return req
}

// infer sends a ModelInfer.
func (t *target) infer(ctx context.Context, req *pb.ModelInferRequest) (*pb.ModelInferResponse, *call) {
	return invoke(ctx, "ModelInfer", req, t.grpc.Stub().ModelInfer)
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

// pbOutput decodes output name from typed or raw contents (A-24: either form
// is allowed, matched by name, never by position).
func pbOutput(resp *pb.ModelInferResponse, name string) (tensor.Tensor, error) {
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

// expectPB compares wanted outputs (by name) with a response.
func expectPB(resp *pb.ModelInferResponse, want ...tensor.Tensor) error {
	if resp == nil {
		return fmt.Errorf("no response")
	}
	var list []error
	for _, w := range want {
		got, err := pbOutput(resp, w.Name)
		if err == nil {
			err = sameTensor(w, got, true)
		}
		list = append(list, err)
	}
	return errs(list...)
}

// grpcRejection grades the answer to a request the server must refuse: any
// non-OK status passes req (and OIP-GRPC-SVC-002); a code other than the
// recommended ones is a warning under OIP-GRPC-ERR-002; an empty message is
// a warning under OIP-GRPC-ERR-001's "descriptive message".
func grpcRejection(c *call, req string, want ...codes.Code) []finding {
	if c.err == nil {
		err := fmt.Errorf("%s: %s, want a non-OK status (e.g. %s)", shortMethod(c.method), c.got(), codeList(want))
		fs := []finding{on(req, c, err)}
		if empty := emptyResponse(c.resp); empty != "" {
			// OK with nothing in it: a failure reported in-band instead of
			// through the status.
			fs = append(fs, on("OIP-GRPC-SVC-002", c, fmt.Errorf("%s: OK with %s; a failure must be signalled by a non-OK status", shortMethod(c.method), empty)))
		}
		return fs
	}
	var fs []finding
	code := c.code()
	if grpcNoAnswer(c.err) != nil {
		return []finding{on("", c, fmt.Errorf("%s: no answer: %v", shortMethod(c.method), c.err))}
	}
	if clientSide(c.err) {
		// The status was made up by the client because the server's
		// answer could not be read: the server refused nothing.
		return []finding{on(req, c, fmt.Errorf("%s: the answer could not be decoded (%v), want a non-OK status from the server", shortMethod(c.method), c.err))}
	}
	if len(want) > 0 && !containsCode(want, code) {
		fs = append(fs, on("OIP-GRPC-ERR-002", c, fmt.Errorf("%s: got %s, recommended %s", shortMethod(c.method), code, codeList(want))))
	}
	if msg := statusMessage(c.err); strings.TrimSpace(msg) == "" {
		fs = append(fs, softOn("OIP-GRPC-ERR-001", "A-04", c, fmt.Errorf("%s: %s has an empty message", shortMethod(c.method), code)))
	}
	return fs
}

// clientSide reports a status that grpc-go made up on the client because
// the server's message could not be read (not a protobuf, too large, bad
// compression); the server did not send it.
func clientSide(err error) bool {
	msg := statusMessage(err)
	for _, p := range []string{"grpc: failed to unmarshal", "grpc: received message larger than max", "grpc: failed to decompress", "grpc: Decompressor is not installed"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
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

func containsCode(cs []codes.Code, c codes.Code) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func codeList(cs []codes.Code) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, " or ")
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
