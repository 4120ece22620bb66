package client

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// The classification extension: ask for an output's top classes with
// ClassifiedOutput, and read the answer with ParseClasses. Both transports
// carry it in an ordinary inference request.

// ClassifiedOutput asks for output name as its k highest-valued classes.
func ClassifiedOutput(name string, k int64) oip.RequestedOutput {
	return oip.RequestedOutput{Name: name, Parameters: oip.Parameters{oip.ParamClassification: k}}
}

// Class is one class of a classification result.
type Class struct {
	Value float64
	Index int
	Label string // empty when the model has no labels
}

// ParseClasses reads a classification output: BYTES strings
// "<value>:<index>" or "<value>:<index>:<label>", in the server's order
// (highest first), row after row.
func ParseClasses(t tensor.Tensor) ([]Class, error) {
	list, ok := t.Data.([][]byte)
	if !ok {
		return nil, fmt.Errorf("classification output %q is %s, want BYTES strings", t.Name, t.Datatype)
	}
	out := make([]Class, 0, len(list))
	for i, b := range list {
		s := string(b)
		value, rest, ok1 := strings.Cut(s, ":")
		index, label, _ := strings.Cut(rest, ":")
		v, err := strconv.ParseFloat(value, 64)
		n, err2 := strconv.Atoi(index)
		if !ok1 || err != nil || err2 != nil || n < 0 {
			return nil, fmt.Errorf("classification output %q: class %d is %q, want \"<value>:<index>[:<label>]\"", t.Name, i, clip(s))
		}
		out = append(out, Class{Value: v, Index: n, Label: label})
	}
	return out, nil
}

// clip shortens a server's string for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
