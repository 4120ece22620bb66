package model

import (
	"context"
	"fmt"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// identityBytes is identity_bytes as the server runs it: fixture's model,
// except that when the caller says its inputs outlive the answer
// (WithInputsOutliveAnswer) OUTPUT0 is INPUT0's elements themselves rather
// than a copy. A 1,000-element BYTES tensor is one megabyte, and the copy was
// one of three the gRPC path made of it (issue 25).
type identityBytes struct{ fixture.Model }

type inputsOutliveKey struct{}

// WithInputsOutliveAnswer marks ctx for a request whose input memory is
// neither reused nor changed until its answer has been sent (gRPC: protobuf
// decodes into fresh memory that only the collector reclaims), so that a
// model may answer with views of its inputs. REST's pooled bodies are not.
func WithInputsOutliveAnswer(ctx context.Context) context.Context {
	return context.WithValue(ctx, inputsOutliveKey{}, true)
}

func inputsOutliveAnswer(ctx context.Context) bool {
	v, _ := ctx.Value(inputsOutliveKey{}).(bool)
	return v
}

func (m identityBytes) Infer(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error) {
	in, ok := inputs["INPUT0"]
	if !inputsOutliveAnswer(ctx) || !ok || in.Datatype != tensor.Bytes {
		return m.Model.Infer(ctx, inputs, params)
	}
	if _, ok := in.Data.([][]byte); !ok {
		return nil, fmt.Errorf("identity_bytes: INPUT0 data is %T, want [][]byte", in.Data)
	}
	return []tensor.Tensor{{Name: "OUTPUT0", Datatype: tensor.Bytes, Shape: in.Shape, Data: in.Data}}, nil
}
