package oip

import (
	"errors"
	"fmt"

	"github.com/oipkit/oipkit/tensor"
)

// Parameters are the OIP name/value pairs allowed on requests, inputs,
// requested outputs, responses and outputs. Values decoded from the wire are
// bool, int64, uint64 (integers above MaxInt64), float64 or string; a
// permissive decode keeps other JSON values (objects, arrays, nil) as
// encoding/json produces them so that clients never lose what a server sent.
type Parameters map[string]any

// Well-known parameter names of the binary-data extension.
const (
	ParamBinaryDataSize   = "binary_data_size"
	ParamBinaryData       = "binary_data"
	ParamBinaryDataOutput = "binary_data_output"
)

// Well-known parameter names of the sequence extension: a request's
// correlation id (an unsigned integer or a string) and the flags that start
// and end its sequence.
const (
	ParamSequenceID    = "sequence_id"
	ParamSequenceStart = "sequence_start"
	ParamSequenceEnd   = "sequence_end"
)

// ParamClassification is the classification extension's parameter on a
// requested output: the number of top classes to return instead of the
// tensor.
const ParamClassification = "classification"

// Well-known parameter names of the schedule-policy extension: a request's
// priority level and its queue timeout in microseconds.
const (
	ParamPriority = "priority"
	ParamTimeout  = "timeout"
)

// HeaderInferenceHeaderContentLength is the HTTP header of the binary-data
// extension that gives the length of the JSON part of a body.
const HeaderInferenceHeaderContentLength = "Inference-Header-Content-Length"

// Validate reports values that are not a string, number or boolean, the only
// kinds the OIP REST text defines.
func (p Parameters) Validate() error {
	for k, v := range p {
		switch v.(type) {
		case bool, int64, uint64, float64, string:
		default:
			return fmt.Errorf("parameter %q has type %T; want string, number or boolean", k, v)
		}
	}
	return nil
}

// Bool returns the boolean parameter name and whether it is present as a
// boolean.
func (p Parameters) Bool(name string) (value, ok bool) {
	v, ok := p[name].(bool)
	return v, ok
}

// Int returns the integer parameter name and whether it is present as an
// integer (int64, or uint64 that fits int64).
func (p Parameters) Int(name string) (int64, bool) {
	switch v := p[name].(type) {
	case int64:
		return v, true
	case uint64:
		if v <= 1<<63-1 {
			return int64(v), true
		}
	}
	return 0, false
}

// ServerMetadata is the response of GET /v2 and ServerMetadata.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

// TensorMetadata describes one model input or output; -1 marks a variable
// dimension.
type TensorMetadata struct {
	Name     string          `json:"name"`
	Datatype tensor.Datatype `json:"datatype"`
	Shape    []int64         `json:"shape"`
}

// ModelMetadata is the response of GET /v2/models/{m}[/versions/{v}] and
// ModelMetadata.
type ModelMetadata struct {
	Name       string            `json:"name"`
	Versions   []string          `json:"versions,omitempty"`
	Platform   string            `json:"platform"`
	Inputs     []TensorMetadata  `json:"inputs"`
	Outputs    []TensorMetadata  `json:"outputs"`
	Properties map[string]string `json:"properties,omitempty"`
}

// InferInput is one request input: a tensor and its parameters.
type InferInput struct {
	tensor.Tensor
	Parameters Parameters
}

// RequestedOutput names an output the client wants, with its parameters
// (for example binary_data).
type RequestedOutput struct {
	Name       string
	Parameters Parameters
}

// InferRequest is an inference request. Model and Version select the model;
// an empty Version lets the server choose. An empty Outputs asks for every
// output.
type InferRequest struct {
	Model      string
	Version    string
	ID         string
	Parameters Parameters
	Inputs     []InferInput
	Outputs    []RequestedOutput
}

// InferOutput is one response output: a tensor and its parameters.
type InferOutput struct {
	tensor.Tensor
	Parameters Parameters
}

// InferResponse is an inference response.
type InferResponse struct {
	Model      string
	Version    string
	ID         string
	Parameters Parameters
	Outputs    []InferOutput
}

// Output returns the output called name, or false.
func (r *InferResponse) Output(name string) (InferOutput, bool) {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o, true
		}
	}
	return InferOutput{}, false
}

// ErrInvalid marks a request or response that does not follow the protocol;
// servers answer it with HTTP 400 or INVALID_ARGUMENT.
var ErrInvalid = errors.New("invalid message")

// ErrTooLarge marks a message that exceeds a configured limit; servers answer
// it with HTTP 413 (body size) or 400, or RESOURCE_EXHAUSTED.
var ErrTooLarge = errors.New("exceeds limit")

// Limits bound what a decoder accepts. Zero fields mean no limit.
type Limits struct {
	// MaxElements caps the element count of any single tensor.
	MaxElements int64
}
