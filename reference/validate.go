package reference

import (
	"fmt"
	"sync"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// validateRequest checks a decoded request against the model metadata, for
// REST and gRPC alike, and returns the inputs by name, in a map to hand back
// with releaseInputs once the model has returned. Every failure is an
// invalidError naming the offending input, output or parameter.
func validateRequest(md *oip.ModelMetadata, req *oip.InferRequest) (map[string]tensor.Tensor, error) {
	inputs := inputMaps.Get().(map[string]tensor.Tensor)
	if err := checkRequest(md, req, inputs); err != nil {
		releaseInputs(inputs)
		return nil, err
	}
	return inputs, nil
}

// inputMaps recycles the maps of inputs that models are called with: a
// model reads the map during its call and keeps none of it (fixture.Model),
// so a map is reused once the call returns. A map holds at most one entry
// per input of a model's metadata, so what the pool keeps is bounded.
var inputMaps = sync.Pool{New: func() any { return make(map[string]tensor.Tensor, 4) }}

// releaseInputs returns a map of validateRequest to the pool; its tensors
// stay the caller's.
func releaseInputs(inputs map[string]tensor.Tensor) {
	clear(inputs)
	inputMaps.Put(inputs)
}

// checkRequest is validateRequest putting the inputs in an empty map.
func checkRequest(md *oip.ModelMetadata, req *oip.InferRequest, inputs map[string]tensor.Tensor) error {
	if err := req.Parameters.Validate(); err != nil {
		return invalidf("request parameters: %v", err)
	}
	if err := wantBool(req.Parameters, oip.ParamBinaryDataOutput); err != nil {
		return invalidf("request parameters: %v", err)
	}
	if err := checkReserved(req.Parameters); err != nil {
		return err
	}
	if err := checkSchedule(req.Parameters); err != nil {
		return err
	}
	for _, in := range req.Inputs {
		meta := findTensor(md.Inputs, in.Name)
		if meta == nil {
			return invalidf("unknown input %q: model %q has inputs %s", in.Name, md.Name, tensorNames(md.Inputs))
		}
		if _, dup := inputs[in.Name]; dup {
			return invalidf("duplicate input %q", in.Name)
		}
		if err := in.Parameters.Validate(); err != nil {
			return invalidf("input %q parameters: %v", in.Name, err)
		}
		if in.Datatype != meta.Datatype {
			return invalidf("input %q: datatype %q does not match the model's %s", in.Name, in.Datatype, meta.Datatype)
		}
		if len(in.Shape) != len(meta.Shape) {
			return invalidf("input %q: shape %s has rank %d, the model's shape %v has rank %d",
				in.Name, shapeText(in.Shape), len(in.Shape), meta.Shape, len(meta.Shape))
		}
		if !tensor.ShapeMatches(meta.Shape, in.Shape) {
			return invalidf("input %q: shape %s does not match the model's shape %v (-1 is any size)", in.Name, shapeText(in.Shape), meta.Shape)
		}
		// The decoders guarantee this; checking again keeps models safe
		// from any decoder that does not.
		if err := in.Tensor.Validate(); err != nil {
			return invalidf("input %q: %v", in.Name, err)
		}
		inputs[in.Name] = in.Tensor
	}
	for _, meta := range md.Inputs {
		if _, ok := inputs[meta.Name]; !ok {
			return invalidf("missing input %q: model %q needs inputs %s", meta.Name, md.Name, tensorNames(md.Inputs))
		}
	}
	for i, out := range req.Outputs {
		if findTensor(md.Outputs, out.Name) == nil {
			return invalidf("unknown output %q: model %q has outputs %s", out.Name, md.Name, tensorNames(md.Outputs))
		}
		for _, prev := range req.Outputs[:i] {
			if prev.Name == out.Name {
				return invalidf("duplicate requested output %q", out.Name)
			}
		}
		if err := out.Parameters.Validate(); err != nil {
			return invalidf("output %q parameters: %v", out.Name, err)
		}
		if err := wantBool(out.Parameters, oip.ParamBinaryData); err != nil {
			return invalidf("output %q parameters: %v", out.Name, err)
		}
		if _, _, err := classificationCount(md, &req.Outputs[i]); err != nil {
			return invalidf("output %q parameters: %v", out.Name, err)
		}
	}
	return nil
}

// wantBool checks that the binary-data extension parameter name, when
// present, is a boolean as the extension defines it.
func wantBool(p oip.Parameters, name string) error {
	if v, ok := p[name]; ok {
		if _, isBool := v.(bool); !isBool {
			return fmt.Errorf("parameter %q is %v; want true or false", name, v)
		}
	}
	return nil
}

func findTensor(ts []oip.TensorMetadata, name string) *oip.TensorMetadata {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

func tensorNames(ts []oip.TensorMetadata) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}

// shapeText formats a request shape for an error message, eliding the middle
// of absurdly long ones so that a hostile request is not echoed in full.
func shapeText(shape []int64) string {
	const keep = 8
	if len(shape) <= 2*keep {
		return fmt.Sprint(shape)
	}
	return fmt.Sprintf("%v ... %v (%d dimensions)", shape[:keep], shape[len(shape)-keep:], len(shape))
}
