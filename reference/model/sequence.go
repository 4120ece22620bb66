package model

import (
	"context"
	"fmt"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// Stateful is a model whose requests belong to sequences (Triton's sequence
// batcher): the server keeps one state per live sequence and hands it to
// each request of that sequence in turn, never to two at once.
type Stateful interface {
	Model
	// InferSequence runs one request of a sequence. state is what the
	// previous request of the sequence returned (nil for the first, the one
	// with sequence_start); next is kept for the following request.
	InferSequence(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters, state any) (outs []tensor.Tensor, next any, err error)
}

// ErrNotInSequence is wrapped by the unary Infer of a stateful model: its
// requests must name a sequence.
func errNotInSequence(name string) error {
	return fmt.Errorf("%w: model %q is stateful: send its requests with the parameters sequence_id (non-zero), sequence_start on the first and sequence_end on the last", ErrInvalidInput, name)
}

// accumulate is the accumulate fixture: OUTPUT0 is the running sum of
// INPUT0 over the requests of the sequence so far (int32, wrapping).
type accumulate struct{ md oip.ModelMetadata }

// NewAccumulate returns the accumulate fixture (version 1).
func NewAccumulate() Stateful {
	one := []int64{1}
	return accumulate{md: metadata("accumulate", "1",
		[]oip.TensorMetadata{{Name: input0, Datatype: tensor.Int32, Shape: one}},
		[]oip.TensorMetadata{{Name: output0, Datatype: tensor.Int32, Shape: one}})}
}

func (m accumulate) Metadata() oip.ModelMetadata { return m.md }

func (m accumulate) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, errNotInSequence(m.md.Name)
}

func (m accumulate) InferSequence(_ context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters, state any) ([]tensor.Tensor, any, error) {
	x, ok := inputs[input0].Data.([]int32)
	if !ok || len(x) != 1 {
		return nil, nil, fmt.Errorf("accumulate: %s holds %T, want one int32", input0, inputs[input0].Data)
	}
	sum, _ := state.(int32)
	sum += x[0]
	return []tensor.Tensor{{Name: output0, Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{sum}}}, sum, nil
}
