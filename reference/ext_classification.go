package reference

import (
	"fmt"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// The classification extension (Triton's): a requested output carrying the
// parameter "classification": k is returned as its k highest-valued
// classes instead of its values. Each class is a BYTES element
// "<value>:<index>", or "<value>:<index>:<label>" when the model has labels
// for the output. Classes are the last dimension of the output: an output of
// shape [batch, n] gives [batch, k], one of shape [n] gives [k]. k above n
// returns every class. Classification cannot be combined with
// shared_memory_region on the same output (Triton's rule). It has no routes of its own: the inference path
// validates the parameter (validateRequest) and applies it (response), over
// REST and gRPC alike.

var extClassification = extension{name: specs.ExtClassification, advertised: true}

// labeler is a model with class labels for some of its outputs.
type labeler interface {
	// Labels returns the labels of output's classes, by index; nil when the
	// output has none.
	Labels(output string) []string
}

// labelsOf returns m's labels, or nil when it has none.
func labelsOf(m model.Model) labeler {
	l, _ := m.(labeler)
	return l
}

// classificationCount reads the classification parameter of a requested
// output: ok is false when it is absent; an error when it is not an integer
// of at least 1 or the output cannot be classified.
func classificationCount(md *oip.ModelMetadata, out *oip.RequestedOutput) (k int64, ok bool, err error) {
	v, present := out.Parameters[oip.ParamClassification]
	if !present {
		return 0, false, nil
	}
	k, isInt := out.Parameters.Int(oip.ParamClassification)
	if !isInt || k < 1 {
		return 0, false, fmt.Errorf("parameter %q is %v; want an integer of at least 1 (the number of classes)", oip.ParamClassification, v)
	}
	if _, shm := out.Parameters[oip.ParamSharedMemoryRegion]; shm {
		// As Triton: the classes are a BYTES tensor the client never sized
		// a region for (OIP-EXT-CLS-007).
		return 0, false, fmt.Errorf("parameter %q cannot be combined with %q on the same output; ask for the classes in the response", oip.ParamClassification, oip.ParamSharedMemoryRegion)
	}
	meta := findTensor(md.Outputs, out.Name)
	if meta != nil && (meta.Datatype == tensor.Bytes || meta.Datatype == tensor.Bool || len(meta.Shape) == 0) {
		return 0, false, fmt.Errorf("output %q is %s %v; classification needs a numeric output of rank 1 or more", out.Name, meta.Datatype, meta.Shape)
	}
	return k, true, nil
}

// classify is the extension's answer for one output; the classifier
// fixture's expected classes come from the same computation.
func classify(t tensor.Tensor, k int64, labels []string) (tensor.Tensor, error) {
	return fixture.Classify(t, k, labels)
}
