package model

import (
	"context"
	"fmt"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// Decoupled is a model that answers a request with 0..N responses, in the
// manner of Triton's decoupled transaction policy. It is served over gRPC
// ModelStreamInfer only; its Infer (the unary path) rejects every request.
type Decoupled interface {
	Model
	// InferStream computes the responses of one request and hands each to
	// send as soon as it is ready, with final set on the last one (a model
	// that sends none returns without calling send). send fails when the
	// stream is gone; InferStream then stops and returns that error.
	InferStream(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters, send func(outs []tensor.Tensor, final bool) error) error
}

// errDecoupledUnary is the unary path's answer for a decoupled model.
func errDecoupledUnary(name string) error {
	return fmt.Errorf("%w: model %q is decoupled (it answers 0..N responses per request): call it over gRPC ModelStreamInfer", ErrInvalidInput, name)
}

// MaxStreamResponses bounds the responses one request to a decoupled
// fixture may ask for, so that one request cannot keep a stream busy for
// ever.
const MaxStreamResponses = 100_000

// Parameters of the tokens fixture.
const (
	// ParamIntervalMS is the gap between two tokens in milliseconds.
	ParamIntervalMS = "interval_ms"
	// ParamFirstTokenMS is the wait before the first token in milliseconds
	// (default: the interval).
	ParamFirstTokenMS = "first_token_ms"
)

// streamCount is the stream_count fixture: INPUT0 = n gives n responses,
// the k-th carrying OUTPUT0 = k (1-based); n = 0 gives none.
type streamCount struct{ md oip.ModelMetadata }

// NewStreamCount returns the stream_count fixture (version 1).
func NewStreamCount() Decoupled {
	one := []int64{1}
	return streamCount{md: metadata("stream_count", "1",
		[]oip.TensorMetadata{{Name: input0, Datatype: tensor.Int32, Shape: one}},
		[]oip.TensorMetadata{{Name: output0, Datatype: tensor.Int32, Shape: one}})}
}

func (m streamCount) Metadata() oip.ModelMetadata { return m.md }

func (m streamCount) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, errDecoupledUnary(m.md.Name)
}

func (m streamCount) InferStream(ctx context.Context, inputs map[string]tensor.Tensor, _ oip.Parameters, send func([]tensor.Tensor, bool) error) error {
	n, err := responseCount(m.md.Name, inputs[input0])
	if err != nil {
		return err
	}
	for k := int32(1); k <= n; k++ {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		out := tensor.Tensor{Name: output0, Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{k}}
		if err := send([]tensor.Tensor{out}, k == n); err != nil {
			return err
		}
	}
	return nil
}

// responseCount reads a response count from a one-element INT32 input.
func responseCount(model string, in tensor.Tensor) (int32, error) {
	x, ok := in.Data.([]int32)
	if !ok || len(x) != 1 {
		return 0, fmt.Errorf("%s: %s holds %T, want one int32", model, input0, in.Data)
	}
	if x[0] < 0 || x[0] > MaxStreamResponses {
		return 0, fmt.Errorf("%w: %s = %d responses, want 0 to %d", ErrInvalidInput, input0, x[0], MaxStreamResponses)
	}
	return x[0], nil
}

// tokenWords is the tokens fixture's vocabulary: token k (1-based) is
// tokenWords[(k-1) % len].
var tokenWords = []string{"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}

// TokenText returns the text of token k (1-based) of the tokens fixture.
func TokenText(k int) string { return tokenWords[(k-1)%len(tokenWords)] }

// tokens is the tokens fixture: INPUT0 = n gives n responses spaced by a
// known interval, the k-th carrying OUTPUT0 = k and OUTPUT1 = TokenText(k),
// so that a load generator can be checked against a known time to first
// response and inter-response gap.
type tokens struct {
	md       oip.ModelMetadata
	interval time.Duration
}

// NewTokens returns the tokens fixture (version 1) with interval as the
// default gap between tokens (and before the first).
func NewTokens(interval time.Duration) Decoupled {
	one := []int64{1}
	return tokens{interval: max(interval, 0), md: metadata("tokens", "1",
		[]oip.TensorMetadata{{Name: input0, Datatype: tensor.Int32, Shape: one}},
		[]oip.TensorMetadata{
			{Name: output0, Datatype: tensor.Int32, Shape: one},
			{Name: output1, Datatype: tensor.Bytes, Shape: one},
		})}
}

func (m tokens) Metadata() oip.ModelMetadata { return m.md }

func (m tokens) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, errDecoupledUnary(m.md.Name)
}

func (m tokens) InferStream(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters, send func([]tensor.Tensor, bool) error) error {
	n, err := responseCount(m.md.Name, inputs[input0])
	if err != nil {
		return err
	}
	interval, err := millisParam(params, ParamIntervalMS, m.interval)
	if err != nil {
		return err
	}
	first, err := millisParam(params, ParamFirstTokenMS, interval)
	if err != nil {
		return err
	}
	// Tokens are due at fixed offsets from the start, so a late wake-up
	// does not push every later token back.
	start := time.Now()
	for k := int32(1); k <= n; k++ {
		due := start.Add(first + time.Duration(k-1)*interval)
		if err := sleepPrecisely(ctx, time.Until(due)); err != nil {
			return fmt.Errorf("tokens: %w", err)
		}
		outs := []tensor.Tensor{
			{Name: output0, Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{k}},
			{Name: output1, Datatype: tensor.Bytes, Shape: []int64{1}, Data: [][]byte{[]byte(TokenText(int(k)))}},
		}
		if err := send(outs, k == n); err != nil {
			return err
		}
	}
	return nil
}

// millisParam reads a duration parameter in milliseconds, bounded by
// MaxDelay like delay_ms.
func millisParam(params oip.Parameters, name string, def time.Duration) (time.Duration, error) {
	if _, ok := params[name]; !ok {
		return def, nil
	}
	// delayOf reads delay_ms; the same rules apply under another name.
	d, err := delayOf(oip.Parameters{ParamDelayMS: params[name]}, def)
	if err != nil {
		return 0, fmt.Errorf("%w: parameter %s is %v, want 0 to %d milliseconds", ErrInvalidInput, name, params[name], MaxDelay/time.Millisecond)
	}
	return d, nil
}
