package oip

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/tensor"
)

// sampleData returns n elements of datatype d that cover the interesting
// values of the type (extremes, zero, negative, fractions, escapes). All are
// representable in JSON; exotic adds values only binary transports carry
// exactly (NaN, ±Inf, -0, invalid UTF-8).
func sampleData(d tensor.Datatype, n int, exotic bool) any {
	pick := func(i int, vs int) int { return i % vs }
	switch d {
	case tensor.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = i%3 != 1
		}
		return v
	case tensor.Uint8:
		vs := []uint8{0, 1, math.MaxUint8, 127, 128}
		return cycle(vs, n, pick)
	case tensor.Uint16:
		return cycle([]uint16{0, 1, math.MaxUint16, 300}, n, pick)
	case tensor.Uint32:
		return cycle([]uint32{0, 1, math.MaxUint32, 1 << 31}, n, pick)
	case tensor.Uint64:
		return cycle([]uint64{0, 1, math.MaxUint64, 1<<53 + 1, 1 << 63}, n, pick)
	case tensor.Int8:
		return cycle([]int8{0, -1, math.MinInt8, math.MaxInt8}, n, pick)
	case tensor.Int16:
		return cycle([]int16{0, -1, math.MinInt16, math.MaxInt16}, n, pick)
	case tensor.Int32:
		return cycle([]int32{0, -1, math.MinInt32, math.MaxInt32, 42}, n, pick)
	case tensor.Int64:
		return cycle([]int64{0, -1, math.MinInt64, math.MaxInt64, -(1<<53 + 1)}, n, pick)
	case tensor.FP16:
		// 1, -2.5, 65504 (max), smallest subnormal, 0.1 rounded.
		vs := []tensor.Float16{0x3c00, 0xc100, 0x7bff, 0x0001, tensor.Float16FromFloat32(0.1), 0}
		if exotic {
			vs = append(vs, 0x7c00, 0xfc00, 0x7e00, 0x8000)
		}
		return cycle(vs, n, pick)
	case tensor.BF16:
		vs := []tensor.BFloat16{0x3f80, 0xc020, 0x7f7f, 0x0001, tensor.BFloat16FromFloat32(0.1), 0}
		if exotic {
			vs = append(vs, 0x7f80, 0xff80, 0x7fc0, 0x8000)
		}
		return cycle(vs, n, pick)
	case tensor.FP32:
		vs := []float32{0, 0.5, -1.25, math.MaxFloat32, math.SmallestNonzeroFloat32, 0.1, -3e-7}
		if exotic {
			vs = append(vs, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), float32(math.Copysign(0, -1)))
		}
		return cycle(vs, n, pick)
	case tensor.FP64:
		vs := []float64{0, 0.5, -1.25, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 1e21, 1e-7}
		if exotic {
			vs = append(vs, math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1))
		}
		return cycle(vs, n, pick)
	case tensor.Bytes:
		vs := [][]byte{[]byte("abc"), {}, []byte("é✓"), []byte("\"quoted\\"), []byte("<&>\n\t\x00\u2028")}
		if exotic {
			vs = append(vs, []byte{0xff, 0xfe, 0x00})
		}
		return cycle(vs, n, pick)
	}
	panic("unknown datatype " + d)
}

func cycle[T any](vs []T, n int, pick func(int, int) int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = vs[pick(i, len(vs))]
	}
	return out
}

// sampleTensor is a [2,3] tensor (a scalar for shape nil) of d.
func sampleTensor(t testing.TB, name string, d tensor.Datatype, shape []int64, exotic bool) tensor.Tensor {
	t.Helper()
	n, err := tensor.ElementCount(shape)
	if err != nil {
		t.Fatal(err)
	}
	tt, err := tensor.New(name, d, shape, sampleData(d, int(n), exotic))
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// allParams has a value of every kind a parameter can carry over every
// transport: bool, int64 (with extremes), uint64 above MaxInt64 (smaller
// uint64 values become int64 over REST JSON), float64 (including integral and
// extreme values) and string (with characters that need escaping).
func allParams(prefix string) Parameters {
	return Parameters{
		prefix + "_bool_t": true,
		prefix + "_bool_f": false,
		prefix + "_int":    int64(-42),
		prefix + "_intmax": int64(math.MaxInt64),
		prefix + "_intmin": int64(math.MinInt64),
		prefix + "_uint":   uint64(math.MaxUint64),
		prefix + "_float":  1.5,
		prefix + "_fint":   2.0,
		prefix + "_fbig":   1e300,
		prefix + "_ftiny":  -5e-324,
		prefix + "_str":    "é-✓ \"<&>\" \n\u2028",
		prefix + "_empty":  "",
		"":                 "empty key",
	}
}

// tensorsEqual compares name, datatype, shape (nil equals empty) and the
// elements bit for bit (through their raw encoding).
func tensorsEqual(a, b tensor.Tensor) error {
	if a.Name != b.Name || a.Datatype != b.Datatype {
		return fmt.Errorf("tensor %q %s != %q %s", a.Name, a.Datatype, b.Name, b.Datatype)
	}
	if !slices.Equal(a.Shape, b.Shape) {
		return fmt.Errorf("tensor %q: shape %v != %v", a.Name, a.Shape, b.Shape)
	}
	ra, err := tensor.EncodeRaw(a)
	if err != nil {
		return fmt.Errorf("tensor %q (want): %v", a.Name, err)
	}
	rb, err := tensor.EncodeRaw(b)
	if err != nil {
		return fmt.Errorf("tensor %q (got): %v", b.Name, err)
	}
	if !bytes.Equal(ra, rb) {
		return fmt.Errorf("tensor %q: data %v != %v", a.Name, a.Data, b.Data)
	}
	return nil
}

// paramsEqual compares parameters, treating nil and empty alike and floats
// bit for bit (so NaN equals itself).
func paramsEqual(a, b Parameters) error {
	if len(a) != len(b) {
		return fmt.Errorf("parameters %v != %v", a, b)
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			return fmt.Errorf("parameter %q missing; got %v", k, b)
		}
		fa, aok := va.(float64)
		fb, bok := vb.(float64)
		if aok && bok {
			if math.Float64bits(fa) != math.Float64bits(fb) {
				return fmt.Errorf("parameter %q: %v != %v", k, fa, fb)
			}
			continue
		}
		if !reflect.DeepEqual(va, vb) {
			return fmt.Errorf("parameter %q: %#v (%T) != %#v (%T)", k, va, va, vb, vb)
		}
	}
	return nil
}

func requestsEqual(want, got *InferRequest) error {
	var errs []string
	add := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if want.Model != got.Model || want.Version != got.Version {
		add(fmt.Errorf("model %q/%q != %q/%q", want.Model, want.Version, got.Model, got.Version))
	}
	if want.ID != got.ID {
		add(fmt.Errorf("id %q != %q", want.ID, got.ID))
	}
	add(paramsEqual(want.Parameters, got.Parameters))
	if len(want.Inputs) != len(got.Inputs) {
		add(fmt.Errorf("%d inputs != %d", len(want.Inputs), len(got.Inputs)))
	} else {
		for i := range want.Inputs {
			add(tensorsEqual(want.Inputs[i].Tensor, got.Inputs[i].Tensor))
			if err := paramsEqual(want.Inputs[i].Parameters, got.Inputs[i].Parameters); err != nil {
				add(fmt.Errorf("input %q: %w", want.Inputs[i].Name, err))
			}
		}
	}
	if len(want.Outputs) != len(got.Outputs) {
		add(fmt.Errorf("%d outputs != %d", len(want.Outputs), len(got.Outputs)))
	} else {
		for i := range want.Outputs {
			if want.Outputs[i].Name != got.Outputs[i].Name {
				add(fmt.Errorf("output %d: %q != %q", i, want.Outputs[i].Name, got.Outputs[i].Name))
			}
			if err := paramsEqual(want.Outputs[i].Parameters, got.Outputs[i].Parameters); err != nil {
				add(fmt.Errorf("output %q: %w", want.Outputs[i].Name, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

func responsesEqual(want, got *InferResponse) error {
	var errs []string
	add := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if want.Model != got.Model || want.Version != got.Version {
		add(fmt.Errorf("model %q/%q != %q/%q", want.Model, want.Version, got.Model, got.Version))
	}
	if want.ID != got.ID {
		add(fmt.Errorf("id %q != %q", want.ID, got.ID))
	}
	add(paramsEqual(want.Parameters, got.Parameters))
	if len(want.Outputs) != len(got.Outputs) {
		add(fmt.Errorf("%d outputs != %d", len(want.Outputs), len(got.Outputs)))
	} else {
		for i := range want.Outputs {
			add(tensorsEqual(want.Outputs[i].Tensor, got.Outputs[i].Tensor))
			if err := paramsEqual(want.Outputs[i].Parameters, got.Outputs[i].Parameters); err != nil {
				add(fmt.Errorf("output %q: %w", want.Outputs[i].Name, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// ids are the request ids every round trip is run with.
var ids = []struct{ name, id string }{
	{"none", ""},
	{"ascii", "42"},
	{"unicode", "é-✓ \"<&>\" \\ \u2028 \x01"},
	{"1KiB", strings.Repeat("ab✓", 1024/5) + strings.Repeat("z", 1024-1024/5*5)},
}
