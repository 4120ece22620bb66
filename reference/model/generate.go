package model

import (
	"context"
	"fmt"
	"strings"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// Tensor and parameter names of text generation (Triton's generate
// extension maps the request's text_input and the response's text_output
// to tensors of those names).
const (
	TextInput  = "text_input"
	TextOutput = "text_output"
	// ParamMaxTokens caps the words text_gen answers.
	ParamMaxTokens = "max_tokens"
	// ParamFailAfter makes text_gen fail after that many words, to show an
	// error after streaming started.
	ParamFailAfter = "fail_after"
	// DefaultMaxTokens is text_gen's max_tokens when a request has none
	// (OIP-GEN's default).
	DefaultMaxTokens = 20
	// MaxTokens bounds max_tokens.
	MaxTokens = 4096
)

// textGen is the text_gen fixture: a decoupled model that answers its
// text_input back one word (with the spaces that follow it) per response,
// at most max_tokens words.
type textGen struct{ md oip.ModelMetadata }

// NewTextGen returns the text_gen fixture (version 1).
func NewTextGen() Decoupled {
	one := []int64{1}
	return textGen{md: metadata("text_gen", "1",
		[]oip.TensorMetadata{{Name: TextInput, Datatype: tensor.Bytes, Shape: one}},
		[]oip.TensorMetadata{{Name: TextOutput, Datatype: tensor.Bytes, Shape: one}})}
}

func (m textGen) Metadata() oip.ModelMetadata { return m.md }

func (m textGen) Infer(context.Context, map[string]tensor.Tensor, oip.Parameters) ([]tensor.Tensor, error) {
	return nil, errDecoupledUnary(m.md.Name)
}

func (m textGen) InferStream(ctx context.Context, inputs map[string]tensor.Tensor, params oip.Parameters, send func([]tensor.Tensor, bool) error) error {
	x, ok := inputs[TextInput].Data.([][]byte)
	if !ok || len(x) != 1 {
		return fmt.Errorf("text_gen: %s holds %T, want one BYTES element", TextInput, inputs[TextInput].Data)
	}
	limit, err := intParam(params, ParamMaxTokens, DefaultMaxTokens, 1, MaxTokens)
	if err != nil {
		return err
	}
	failAfter, err := intParam(params, ParamFailAfter, -1, 0, MaxTokens)
	if err != nil {
		return err
	}
	words := Words(string(x[0]))
	if len(words) > limit {
		words = words[:limit]
	}
	for i, w := range words {
		if i == failAfter {
			return fmt.Errorf("text_gen: failed after %d words, as %s asked", i, ParamFailAfter)
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		out := tensor.Tensor{Name: TextOutput, Datatype: tensor.Bytes, Shape: []int64{1}, Data: [][]byte{[]byte(w)}}
		if err := send([]tensor.Tensor{out}, i == len(words)-1); err != nil {
			return err
		}
	}
	if failAfter >= 0 && failAfter >= len(words) {
		return fmt.Errorf("text_gen: failed after %d words, as %s asked", len(words), ParamFailAfter)
	}
	return nil
}

// Words splits s into text_gen's tokens: each word with the spaces that
// follow it (leading spaces belong to the first), so that the tokens joined
// are s again.
func Words(s string) []string {
	var out []string
	for len(s) > 0 {
		start := len(s) - len(strings.TrimLeft(s, " "))
		end := strings.IndexByte(s[start:], ' ')
		if end < 0 {
			out = append(out, s)
			break
		}
		end += start
		for end < len(s) && s[end] == ' ' {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// intParam reads an integer parameter in [lo, hi].
func intParam(params oip.Parameters, name string, def, lo, hi int) (int, error) {
	v, present := params[name]
	if !present {
		return def, nil
	}
	n, ok := params.Int(name)
	if f, isFloat := v.(float64); isFloat && f == float64(int64(f)) {
		n, ok = int64(f), true
	}
	if !ok || n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("%w: parameter %s is %v, want an integer from %d to %d", ErrInvalidInput, name, v, lo, hi)
	}
	return int(n), nil
}
