package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/oipkit/oipkit/tensor"
)

// Tensor equality, datatype-aware: datatype and shape must match; elements
// are compared in row-major order, integers and BOOL bit for bit, BYTES
// byte for byte, floats bit for bit (FP16 and BF16 by their bit patterns),
// so that -0 is not 0 and a NaN keeps its sign and payload: binary, raw and
// typed contents carry the bits. In "near" mode, used for floats that
// travelled as JSON decimal text, floats may differ by a relative tolerance
// suited to their width and any NaN equals any NaN (JSON has no NaN, A-22).
// The first differing element is reported with its flat and its
// multi-dimensional index.

// compareTensor returns nil when got equals want.
func compareTensor(want, got tensor.Tensor, near bool) error {
	if got.Datatype != want.Datatype {
		return fmt.Errorf("output %q: datatype %s, want %s", want.Name, got.Datatype, want.Datatype)
	}
	if !slices.Equal(normShape(got.Shape), normShape(want.Shape)) {
		return fmt.Errorf("output %q: shape %v, want %v", want.Name, got.Shape, want.Shape)
	}
	if got.Len() != want.Len() {
		return fmt.Errorf("output %q: %d elements, want %d", want.Name, got.Len(), want.Len())
	}
	for i := 0; i < want.Len(); i++ {
		g, w := element(got, i), element(want, i)
		if !sameElement(w, g, near) {
			return fmt.Errorf("output %q: element %d%s is %s, want %s (got %s, want %s)",
				want.Name, i, multiIndex(i, want.Shape), show(g), show(w), preview(got), preview(want))
		}
	}
	return nil
}

func normShape(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}

// multiIndex is " [1 0]" for flat index i of shape [2 3]; "" for rank < 2.
func multiIndex(i int, shape []int64) string {
	if len(shape) < 2 {
		return ""
	}
	idx := make([]int64, len(shape))
	rest := int64(i)
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] <= 0 {
			return ""
		}
		idx[d] = rest % shape[d]
		rest /= shape[d]
	}
	return fmt.Sprint(" ", idx)
}

// element returns element i as a comparable Go value.
func element(t tensor.Tensor, i int) any {
	switch v := t.Data.(type) {
	case []bool:
		return v[i]
	case []uint8:
		return uint64(v[i])
	case []uint16:
		return uint64(v[i])
	case []uint32:
		return uint64(v[i])
	case []uint64:
		return v[i]
	case []int8:
		return int64(v[i])
	case []int16:
		return int64(v[i])
	case []int32:
		return int64(v[i])
	case []int64:
		return v[i]
	case []tensor.Float16:
		return v[i]
	case []tensor.BFloat16:
		return v[i]
	case []float32:
		return v[i]
	case []float64:
		return v[i]
	case [][]byte:
		return string(v[i])
	}
	return nil
}

// Element returns element i of t as a comparable Go value: bool, int64,
// uint64, float32, float64, tensor.Float16, tensor.BFloat16 or string.
func Element(t tensor.Tensor, i int) any { return element(t, i) }

func sameElement(want, got any, near bool) bool {
	switch w := want.(type) {
	case float32:
		g := got.(float32)
		switch {
		case !near:
		case isNaN(float64(w)) || isNaN(float64(g)):
			return isNaN(float64(w)) && isNaN(float64(g))
		default:
			return closeTo(float64(w), float64(g), 1e-6)
		}
		return math.Float32bits(w) == math.Float32bits(g)
	case float64:
		g := got.(float64)
		switch {
		case !near:
		case isNaN(w) || isNaN(g):
			return isNaN(w) && isNaN(g)
		default:
			return closeTo(w, g, 1e-12)
		}
		return math.Float64bits(w) == math.Float64bits(g)
	case tensor.Float16:
		g := got.(tensor.Float16)
		wf, gf := float64(w.Float32()), float64(g.Float32())
		switch {
		case !near:
		case isNaN(wf) || isNaN(gf):
			return isNaN(wf) && isNaN(gf)
		default:
			return closeTo(wf, gf, 1e-3)
		}
		return w == g
	case tensor.BFloat16:
		g := got.(tensor.BFloat16)
		wf, gf := float64(w.Float32()), float64(g.Float32())
		switch {
		case !near:
		case isNaN(wf) || isNaN(gf):
			return isNaN(wf) && isNaN(gf)
		default:
			return closeTo(wf, gf, 1e-2)
		}
		return w == g
	}
	return want == got
}

func isNaN(f float64) bool { return f != f }

func closeTo(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// show renders one element: floats with their bit pattern too, so that two
// values that print alike but differ (a NaN payload, -0) are told apart.
func show(v any) string {
	switch x := v.(type) {
	case float32:
		return fmt.Sprintf("%v (0x%08x)", x, math.Float32bits(x))
	case float64:
		return fmt.Sprintf("%v (0x%016x)", x, math.Float64bits(x))
	case tensor.Float16:
		return fmt.Sprintf("%v (0x%04x)", x.Float32(), uint16(x))
	case tensor.BFloat16:
		return fmt.Sprintf("%v (0x%04x)", x.Float32(), uint16(x))
	case string:
		return fmt.Sprintf("%q", clip(x, 80))
	}
	return fmt.Sprint(v)
}

func preview(t tensor.Tensor) string {
	s := fmt.Sprint(t.Data)
	if b, ok := t.Data.([][]byte); ok {
		parts := make([]string, len(b))
		for i, e := range b {
			parts[i] = fmt.Sprintf("%q", clip(string(e), 40))
		}
		s = "[" + strings.Join(parts, " ") + "]"
	}
	return clip(s, 200)
}
