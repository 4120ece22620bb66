package loadgen

import (
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// TargetInfo describes what a run was sent to; it goes into the result.
type TargetInfo struct {
	Server   oip.ServerMetadata `json:"server"`
	Model    oip.ModelMetadata  `json:"model"`
	Inputs   []TensorInfo       `json:"inputs"`
	Payloads int                `json:"payloads"` // distinct requests, sent round-robin
	Bytes    []int              `json:"bytes"`    // serialized size of each
	// Validation is where expected outputs came from: "", "validation_data"
	// or "fixture".
	Validation string `json:"validation,omitempty"`
}

// TensorInfo describes one input of the first payload.
type TensorInfo struct {
	Name     string          `json:"name"`
	Datatype tensor.Datatype `json:"datatype"`
	Shape    []int64         `json:"shape"`
}
