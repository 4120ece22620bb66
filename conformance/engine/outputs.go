package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/onsi/gomega/types"

	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// Matchers of inference responses. Those that make sense over both
// transports take an [*Exchange] (a REST inference, parsed once) or a
// [*Call] (a ModelInfer); outputs are always found by name, never by
// position, in whichever form the server chose (JSON data, binary
// data, typed contents, raw contents; A-24).
//
// The types and required members of REST bodies are the schema's
// (schema.go, [MatchSchema]); these matchers check what a schema cannot.

// outputTensor decodes output name from a REST or gRPC inference answer.
func outputTensor(actual any, name string) (tensor.Tensor, error) {
	if c, ok := actual.(*Call); ok {
		if err := okCall(c); err != nil {
			return tensor.Tensor{}, err
		}
		resp, ok := c.Resp.(*pb.ModelInferResponse)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("conformance suite bug: %s is not ModelInfer", c.Name())
		}
		return PBOutput(resp, name)
	}
	r, err := inferOf(actual)
	if err != nil {
		return tensor.Tensor{}, err
	}
	return r.Tensor(name)
}

// HaveOutputs matches an inference answer carrying every wanted output (by
// name) with its datatype, shape and elements: integers, BOOL and BYTES
// exactly, floats bit for bit (FP16/BF16 by their bit patterns), NaN as
// NaN. The failure names the first differing element.
func HaveOutputs(want ...tensor.Tensor) types.GomegaMatcher {
	return outputsMatcher(want, false)
}

// HaveOutputsNear is HaveOutputs with floats compared within a relative
// tolerance suited to JSON's decimal text; integers stay exact.
func HaveOutputsNear(want ...tensor.Tensor) types.GomegaMatcher {
	return outputsMatcher(want, true)
}

func outputsMatcher(want []tensor.Tensor, near bool) types.GomegaMatcher {
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.Name
	}
	return newMatcher("return "+strings.Join(names, ", "), func(actual any) error {
		var list []error
		for _, w := range want {
			got, err := outputTensor(actual, w.Name)
			if err == nil {
				err = compareTensor(w, got, near)
			} else if isUnusable(err) || !isInference(actual) {
				return err
			}
			list = append(list, err)
		}
		return errs(list...)
	})
}

// isInference reports whether actual is an inference answer the outputs
// can be looked for in (a 200, or an OK call).
func isInference(actual any) bool {
	if c, ok := actual.(*Call); ok {
		return c.Err == nil
	}
	_, err := inferOf(actual)
	return err == nil
}

func isUnusable(err error) bool {
	f, ok := err.(*failure)
	return ok && f.g.noAnswer
}

// HaveOnlyOutputs matches an inference answer whose outputs are all among
// names.
func HaveOnlyOutputs(names ...string) types.GomegaMatcher {
	return newMatcher("return only "+strings.Join(names, ", "), func(actual any) error {
		got, err := outputNames(actual)
		if err != nil {
			return err
		}
		var list []error
		for _, n := range got {
			if !slices.Contains(names, n) {
				list = append(list, fmt.Errorf("output %q was returned; want only %s (outputs: %v)", n, strings.Join(names, ", "), got))
			}
		}
		return errs(list...)
	})
}

func outputNames(actual any) ([]string, error) {
	if c, ok := actual.(*Call); ok {
		resp, err := view[*pb.ModelInferResponse](c)
		if err != nil {
			return nil, err
		}
		var ns []string
		for _, o := range resp.GetOutputs() {
			ns = append(ns, o.GetName())
		}
		return ns, nil
	}
	r, err := inferOf(actual)
	if err != nil {
		return nil, err
	}
	return r.Names(), nil
}

// HaveResponseID matches an inference answer whose id is want.
func HaveResponseID(want string) types.GomegaMatcher {
	return newMatcher(fmt.Sprintf("carry id %q", clip(want, 80)), func(actual any) error {
		if c, ok := actual.(*Call); ok {
			resp, err := view[*pb.ModelInferResponse](c)
			if err != nil {
				return err
			}
			if resp.GetId() != want {
				return fmt.Errorf("id is %q, want %q", clip(resp.GetId(), 80), clip(want, 80))
			}
			return nil
		}
		r, err := inferOf(actual)
		if err != nil {
			return err
		}
		got, err := StringField(r.Top, "id")
		if err == nil && got != want {
			err = fmt.Errorf("id is %q, want %q", clip(got, 80), clip(want, 80))
		}
		return err
	})
}

// HaveModelName matches an inference answer naming model in model_name.
func HaveModelName(model string) types.GomegaMatcher {
	return newMatcher("name model "+model, func(actual any) error {
		if c, ok := actual.(*Call); ok {
			resp, err := view[*pb.ModelInferResponse](c)
			if err != nil {
				return err
			}
			if resp.GetModelName() != model {
				return fmt.Errorf("model_name is %q, want %q", resp.GetModelName(), model)
			}
			return nil
		}
		r, err := inferOf(actual)
		if err != nil {
			return err
		}
		got, err := StringField(r.Top, "model_name")
		if err == nil && got != model {
			err = fmt.Errorf("model_name is %q, want %q", got, model)
		}
		return err
	})
}

// ----- REST responses -----

// HaveConcreteShapes matches a REST inference response whose output shapes
// have no dimension below 0 (OIP-REST-RESP-007).
func HaveConcreteShapes() types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		var list []error
		for _, o := range r.Outputs {
			for _, d := range o.Shape {
				if d < 0 {
					list = append(list, fmt.Errorf("output %q: shape %v has dimension %d", o.Name, o.Shape, d))
				}
			}
		}
		return errs(list...)
	})
}

// HaveOutputDatatype matches a REST inference response whose named outputs,
// where present, have the given datatype.
func HaveOutputDatatype(datatype string, names ...string) types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		var list []error
		for _, n := range names {
			if o := r.Output(n); o != nil && o.Datatype != datatype {
				list = append(list, fmt.Errorf("output %q: datatype %q, want %q", n, o.Datatype, datatype))
			}
		}
		return errs(list...)
	})
}

// HaveDataCounts matches a REST inference response whose JSON outputs each
// carry prod(shape) data elements, nested or flat (OIP-REST-RESP-009).
func HaveDataCounts() types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		var list []error
		for _, o := range r.Outputs {
			if o.BinSize >= 0 || len(o.Problems) > 0 {
				continue
			}
			if n, err := countJSON(o.Fields["data"]); err != nil {
				list = append(list, fmt.Errorf("output %q: data: %v", o.Name, err))
			} else if want, _ := tensor.ElementCount(o.Shape); int64(n) != want {
				list = append(list, fmt.Errorf("output %q: %d data elements for shape %v, want %d", o.Name, n, o.Shape, want))
			}
		}
		return errs(list...)
	})
}

// countJSON counts the leaves of a (possibly nested) JSON array.
func countJSON(raw json.RawMessage) (int, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	arr, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("%s is not an array", clip(string(raw), 80))
	}
	n := 0
	var walk func([]any)
	walk = func(a []any) {
		for _, e := range a {
			if sub, ok := e.([]any); ok {
				walk(sub)
			} else {
				n++
			}
		}
	}
	walk(arr)
	return n, nil
}

// ----- the binary tensor data extension -----

// HaveBinaryFraming matches a binary REST response framed as the extension
// says (OIP-EXT-BIN-009): Inference-Header-Content-Length is the JSON
// length and the body (Content-Length) is that plus the outputs'
// binary_data_size.
func HaveBinaryFraming() types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		e := r.Ex
		if e.Header.Get(oip.HeaderInferenceHeaderContentLength) == "" {
			return fmt.Errorf("response carries binary outputs but no %s header", oip.HeaderInferenceHeaderContentLength)
		}
		if err := errs(r.Framing, r.Slicing); err != nil {
			return err
		}
		var sum int64
		for _, o := range r.Outputs {
			if o.BinSize > 0 {
				sum += o.BinSize
			}
		}
		if want := int64(len(r.JSONPart)) + sum; int64(len(e.Body)) != want {
			return fmt.Errorf("body is %d bytes, want JSON %d + binary_data_size %d = %d", len(e.Body), len(r.JSONPart), sum, want)
		}
		if cl := e.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(e.Body)) {
			return fmt.Errorf("Content-Length is %s but the body is %d bytes", cl, len(e.Body))
		}
		return nil
	})
}

// HaveBinaryOutput matches a REST response in which output name came back
// as binary data (no data, binary_data_size) when binary is true, or as
// JSON data when it is false.
func HaveBinaryOutput(name string, binary bool) types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		o := r.Output(name)
		if o == nil {
			return fmt.Errorf("output %q is missing (outputs: %v)", name, r.Names())
		}
		_, hasData := o.Fields["data"]
		switch {
		case binary && hasData:
			return fmt.Errorf("output %q was asked for as binary but carries \"data\"", name)
		case binary && o.BinSize < 0:
			return fmt.Errorf("output %q was asked for as binary but has no parameters.binary_data_size", name)
		case !binary && o.BinSize >= 0:
			return fmt.Errorf("output %q was asked for as JSON but came back as binary data", name)
		case !binary && !hasData:
			return fmt.Errorf("output %q was asked for as JSON but has no \"data\"", name)
		}
		return nil
	})
}

// HaveBinaryDataSize matches a REST response whose output name has
// binary_data_size n.
func HaveBinaryDataSize(name string, n int64) types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		switch o := r.Output(name); {
		case o == nil:
			return fmt.Errorf("output %q: binary_data_size (output missing), want %d", name, n)
		case o.BinSize < 0:
			return fmt.Errorf("output %q: binary_data_size (absent), want %d", name, n)
		case o.BinSize != n:
			return fmt.Errorf("output %q: binary_data_size %d, want %d", name, o.BinSize, n)
		}
		return nil
	})
}

// HaveBinaryBytes matches a REST response whose output name came back as
// binary data with exactly these bytes.
func HaveBinaryBytes(name string, want []byte) types.GomegaMatcher {
	return PassCheck(func(r *InferResponse) error {
		switch o := r.Output(name); {
		case o == nil:
			return fmt.Errorf("output %q is missing (outputs: %v)", name, r.Names())
		case o.BinSize < 0:
			return fmt.Errorf("output %q was asked for as binary but has no binary_data_size", name)
		case string(o.Bin) != string(want):
			return fmt.Errorf("output %q binary data is %x, want %x", name, o.Bin, want)
		}
		return nil
	})
}

// ----- gRPC responses -----

// HaveRawOutputForm matches a ModelInfer answer that uses
// raw_output_contents, if at all, with one entry per output, of the size
// its shape implies, and no contents (OIP-GRPC-RAW-007).
func HaveRawOutputForm() types.GomegaMatcher {
	return PassCheck(rawFormErr)
}

// HaveOutputTensorFields matches a ModelInfer answer whose outputs each
// carry a name and a datatype and whose data is in contents or in
// raw_output_contents (OIP-GRPC-INFER-014).
func HaveOutputTensorFields() types.GomegaMatcher {
	return PassCheck(func(resp *pb.ModelInferResponse) error {
		var list []error
		for _, o := range resp.GetOutputs() {
			if o.GetName() == "" || o.GetDatatype() == "" {
				list = append(list, fmt.Errorf("output %q has datatype %q; want both set", o.GetName(), o.GetDatatype()))
			}
			if o.GetContents() == nil && len(resp.GetRawOutputContents()) == 0 {
				list = append(list, fmt.Errorf("output %q has neither contents nor raw_output_contents", o.GetName()))
			}
		}
		return errs(list...)
	})
}
