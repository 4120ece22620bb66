package conformance

import (
	"fmt"
	"math"
	"reflect"

	"github.com/oipkit/oipkit/tensor"
)

// Named test values. Fixture outputs are computed from these by the suite,
// never read from a server.

// sample returns the [2,3] test tensor of datatype d used for identity round
// trips: distinct values including the type's extremes, so that a swapped,
// truncated or narrowed element is visible.
func sample(name string, d tensor.Datatype) tensor.Tensor {
	var data any
	switch d {
	case tensor.Bool:
		data = []bool{true, false, true, true, false, false}
	case tensor.Uint8:
		data = []uint8{0, 1, 2, 127, 254, math.MaxUint8}
	case tensor.Uint16:
		data = []uint16{0, 1, 2, 1000, 65534, math.MaxUint16}
	case tensor.Uint32:
		data = []uint32{0, 1, 2, 1_000_000, math.MaxUint32 - 1, math.MaxUint32}
	case tensor.Uint64:
		data = []uint64{0, 1, 2, 1 << 40, 1<<53 + 1, math.MaxUint64}
	case tensor.Int8:
		data = []int8{math.MinInt8, -1, 0, 1, 2, math.MaxInt8}
	case tensor.Int16:
		data = []int16{math.MinInt16, -1, 0, 1, 2, math.MaxInt16}
	case tensor.Int32:
		data = []int32{math.MinInt32, -1, 0, 1, 2, math.MaxInt32}
	case tensor.Int64:
		data = []int64{math.MinInt64, -1, 0, 1, 1<<53 + 1, math.MaxInt64}
	case tensor.FP16:
		data = []tensor.Float16{0x3800, 0xbd00, 0x0000, 0x3c00, 0x4000, 0x7bff} // 0.5 -1.25 0 1 2 65504
	case tensor.BF16:
		data = []tensor.BFloat16{0x3f00, 0xbfa0, 0x0000, 0x3f80, 0x4000, 0x7f7f} // 0.5 -1.25 0 1 2 max
	case tensor.FP32:
		data = []float32{0.5, -1.25, 0, 1, math.MaxFloat32, -3.0e-38}
	case tensor.FP64:
		data = []float64{0.5, -1.25, 0, 1, math.MaxFloat64, -1e-300}
	case tensor.Bytes:
		data = [][]byte{[]byte("abc"), {}, []byte("é"), []byte("hi"), []byte("x y"), []byte("0")}
	}
	return tensor.Tensor{Name: name, Datatype: d, Shape: []int64{2, 3}, Data: data}
}

// jsonSafeSample is sample with INT64/UINT64 values no larger than 2^53 in
// magnitude, which every JSON stack carries exactly; A-21 only reports what
// happens beyond that (see wideSample).
func jsonSafeSample(name string, d tensor.Datatype) tensor.Tensor {
	t := sample(name, d)
	switch d {
	case tensor.Int64:
		t.Data = []int64{-(1 << 53), -1, 0, 1, 1 << 40, 1 << 53}
	case tensor.Uint64:
		t.Data = []uint64{0, 1, 2, 1 << 40, 1<<53 - 1, 1 << 53}
	}
	return t
}

// wideSample is the [1,3] INT64 or UINT64 tensor of values beyond 2^53 that
// A-21 asks the suite to report on (not grade).
func wideSample(name string, d tensor.Datatype) tensor.Tensor {
	t := tensor.Tensor{Name: name, Datatype: d, Shape: []int64{1, 3}}
	if d == tensor.Int64 {
		t.Data = []int64{math.MinInt64, 1<<53 + 1, math.MaxInt64}
	} else {
		t.Data = []uint64{1<<53 + 1, 1<<63 + 1, math.MaxUint64}
	}
	return t
}

// int32s is an INT32 tensor with the given shape.
func int32s(name string, shape []int64, v ...int32) tensor.Tensor {
	return tensor.Tensor{Name: name, Datatype: tensor.Int32, Shape: shape, Data: v}
}

// addSubInputs are the add_sub inputs of catalog OIP-REST-INFER-001:
// INPUT0 = 0..15, INPUT1 = 1 (times 16), for a batch of n rows (row r adds
// 100*r to INPUT0, so rows are distinguishable).
func addSubInputs(n int) (in0, in1 tensor.Tensor) {
	a := make([]int32, 16*n)
	b := make([]int32, 16*n)
	for i := range a {
		a[i] = int32(i%16 + 100*(i/16))
		b[i] = 1
	}
	shape := []int64{int64(n), 16}
	return int32s("INPUT0", shape, a...), int32s("INPUT1", shape, b...)
}

// addSubOutputs computes what add_sub must return for its inputs.
func addSubOutputs(in0, in1 tensor.Tensor) (out0, out1 tensor.Tensor) {
	a, b := in0.Data.([]int32), in1.Data.([]int32)
	s := make([]int32, len(a))
	d := make([]int32, len(a))
	for i := range a {
		s[i] = a[i] + b[i]
		d[i] = a[i] - b[i]
	}
	return int32s("OUTPUT0", in0.Shape, s...), int32s("OUTPUT1", in0.Shape, d...)
}

// renamed returns t under another name.
func renamed(t tensor.Tensor, name string) tensor.Tensor {
	t.Name = name
	return t
}

// sameTensor compares datatype, shape and elements. exact requires bit
// equality for floats (binary and raw transports); otherwise floats are
// compared with a relative tolerance suited to JSON's decimal text.
func sameTensor(want, got tensor.Tensor, exact bool) error {
	if got.Datatype != want.Datatype {
		return fmt.Errorf("output %q: datatype %s, want %s", want.Name, got.Datatype, want.Datatype)
	}
	if !reflect.DeepEqual(normShape(got.Shape), normShape(want.Shape)) {
		return fmt.Errorf("output %q: shape %v, want %v", want.Name, got.Shape, want.Shape)
	}
	if got.Len() != want.Len() {
		return fmt.Errorf("output %q: %d elements, want %d", want.Name, got.Len(), want.Len())
	}
	for i := 0; i < want.Len(); i++ {
		g, w := element(got, i), element(want, i)
		if !sameElement(w, g, exact) {
			return fmt.Errorf("output %q: element %d is %v, want %v (got %v, want %v)",
				want.Name, i, g, w, preview(got), preview(want))
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

func sameElement(want, got any, exact bool) bool {
	switch w := want.(type) {
	case float32:
		g := got.(float32)
		if exact {
			return math.Float32bits(w) == math.Float32bits(g)
		}
		return closeTo(float64(w), float64(g), 1e-6)
	case float64:
		g := got.(float64)
		if exact {
			return math.Float64bits(w) == math.Float64bits(g)
		}
		return closeTo(w, g, 1e-12)
	case tensor.Float16:
		g := got.(tensor.Float16)
		return exact && w == g || !exact && closeTo(float64(w.Float32()), float64(g.Float32()), 1e-3)
	case tensor.BFloat16:
		g := got.(tensor.BFloat16)
		return exact && w == g || !exact && closeTo(float64(w.Float32()), float64(g.Float32()), 1e-2)
	}
	return want == got
}

func closeTo(a, b, rel float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

func preview(t tensor.Tensor) string {
	s := fmt.Sprint(t.Data)
	if b, ok := t.Data.([][]byte); ok {
		parts := make([]string, len(b))
		for i, e := range b {
			parts[i] = fmt.Sprintf("%q", e)
		}
		s = fmt.Sprint(parts)
	}
	return clip(s, 200)
}

// jsonValues is the element list of t as JSON values (for hand-built REST
// bodies): numbers, booleans or strings, never base64.
func jsonValues(t tensor.Tensor) []any {
	out := make([]any, t.Len())
	for i := range out {
		switch e := element(t, i).(type) {
		case tensor.Float16:
			out[i] = e.Float32()
		case tensor.BFloat16:
			out[i] = e.Float32()
		default:
			out[i] = e
		}
	}
	return out
}

// nested reshapes a flat element list into nested arrays following shape.
func nested(flat []any, shape []int64) any {
	if len(shape) <= 1 {
		return flat
	}
	rows := int(shape[0])
	if rows == 0 {
		return []any{}
	}
	per := len(flat) / rows
	out := make([]any, rows)
	for r := range out {
		out[r] = nested(flat[r*per:(r+1)*per], shape[1:])
	}
	return out
}
