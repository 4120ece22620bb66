package tensor

import (
	"fmt"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// ToContents converts t to gRPC typed contents. FP16 and BF16 have no typed
// field and return an error: they must travel as raw contents.
//
// Where the Go types agree (BOOL, INT32, INT64, UINT32, UINT64, FP32, FP64,
// BYTES) the contents share t's slice instead of copying it; INT8, INT16,
// UINT8 and UINT16 are widened into a new slice.
func ToContents(t Tensor) (*inferencepb.InferTensorContents, error) {
	if !t.Datatype.Valid() {
		return nil, fmt.Errorf("tensor %q: unknown datatype %q", t.Name, t.Datatype)
	}
	if !dataMatches(t.Datatype, t.Data) {
		return nil, fmt.Errorf("tensor %q: %s data held as %T", t.Name, t.Datatype, t.Data)
	}
	c := &inferencepb.InferTensorContents{}
	switch v := t.Data.(type) {
	case []bool:
		c.BoolContents = v
	case []int8:
		c.IntContents = widen[int32](v)
	case []int16:
		c.IntContents = widen[int32](v)
	case []int32:
		c.IntContents = v
	case []int64:
		c.Int64Contents = v
	case []uint8:
		c.UintContents = widen[uint32](v)
	case []uint16:
		c.UintContents = widen[uint32](v)
	case []uint32:
		c.UintContents = v
	case []uint64:
		c.Uint64Contents = v
	case []float32:
		c.Fp32Contents = v
	case []float64:
		c.Fp64Contents = v
	case [][]byte:
		c.BytesContents = v
	default: // []Float16, []BFloat16
		return nil, fmt.Errorf("tensor %q: %s has no typed contents field; use raw contents", t.Name, t.Datatype)
	}
	return c, nil
}

func widen[W int32 | uint32, N int8 | int16 | uint8 | uint16](v []N) []W {
	w := make([]W, len(v))
	for i, e := range v {
		w[i] = W(e)
	}
	return w
}

// contentsField names the InferTensorContents field that carries d, or ""
// when d must travel as raw contents.
func contentsField(d Datatype) string {
	switch d {
	case Bool:
		return "bool_contents"
	case Int8, Int16, Int32:
		return "int_contents"
	case Int64:
		return "int64_contents"
	case Uint8, Uint16, Uint32:
		return "uint_contents"
	case Uint64:
		return "uint64_contents"
	case FP32:
		return "fp32_contents"
	case FP64:
		return "fp64_contents"
	case Bytes:
		return "bytes_contents"
	}
	return ""
}

// FromContents converts gRPC typed contents into a tensor of datatype d and
// concrete shape. Only the field matching d may be set (INT8/INT16/INT32 in
// int_contents, UINT8/UINT16/UINT32 in uint_contents, ...), values must fit
// the datatype's range, and the count must equal the shape's element count.
// A nil c stands for empty contents and is valid only for zero elements.
//
// Where the Go types agree the tensor shares c's slice instead of copying it;
// narrower integer types are copied after their range is checked.
func FromContents(name string, d Datatype, shape []int64, c *inferencepb.InferTensorContents) (Tensor, error) {
	if !d.Valid() {
		return Tensor{}, fmt.Errorf("tensor %q: unknown datatype %q", name, d)
	}
	want := contentsField(d)
	if want == "" {
		return Tensor{}, fmt.Errorf("tensor %q: %s has no typed contents field; it must be sent as raw contents", name, d)
	}
	n, err := ElementCount(shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if c == nil {
		c = &inferencepb.InferTensorContents{}
	}
	fields := []struct {
		name string
		len  int
	}{
		{"bool_contents", len(c.BoolContents)},
		{"int_contents", len(c.IntContents)},
		{"int64_contents", len(c.Int64Contents)},
		{"uint_contents", len(c.UintContents)},
		{"uint64_contents", len(c.Uint64Contents)},
		{"fp32_contents", len(c.Fp32Contents)},
		{"fp64_contents", len(c.Fp64Contents)},
		{"bytes_contents", len(c.BytesContents)},
	}
	got := 0
	for _, f := range fields {
		switch {
		case f.name == want:
			got = f.len
		case f.len > 0:
			return Tensor{}, fmt.Errorf("tensor %q: %s data in %s, want %s", name, d, f.name, want)
		}
	}
	// Counting before converting means a shape/contents mismatch never
	// allocates.
	if int64(got) != n {
		return Tensor{}, fmt.Errorf("tensor %q: %s holds %d elements, shape %v needs %d", name, want, got, shape, n)
	}
	t := Tensor{Name: name, Datatype: d, Shape: shape}
	switch d {
	case Bool:
		t.Data = orEmpty(c.BoolContents)
	case Int8:
		t.Data, err = narrow[int8](c.IntContents, d)
	case Int16:
		t.Data, err = narrow[int16](c.IntContents, d)
	case Int32:
		t.Data = orEmpty(c.IntContents)
	case Int64:
		t.Data = orEmpty(c.Int64Contents)
	case Uint8:
		t.Data, err = narrow[uint8](c.UintContents, d)
	case Uint16:
		t.Data, err = narrow[uint16](c.UintContents, d)
	case Uint32:
		t.Data = orEmpty(c.UintContents)
	case Uint64:
		t.Data = orEmpty(c.Uint64Contents)
	case FP32:
		t.Data = orEmpty(c.Fp32Contents)
	case FP64:
		t.Data = orEmpty(c.Fp64Contents)
	case Bytes:
		t.Data = orEmpty(c.BytesContents)
	}
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %s: %w", name, want, err)
	}
	return t, nil
}

// orEmpty returns v, or an empty non-nil slice for nil, so an empty tensor
// holds the same value whichever way it was built.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// narrow copies wide values into a narrower integer type, failing on the
// first one out of range.
func narrow[N int8 | int16 | uint8 | uint16, W int32 | uint32](v []W, d Datatype) ([]N, error) {
	out := make([]N, len(v))
	for i, e := range v {
		out[i] = N(e)
		if W(out[i]) != e {
			return nil, fmt.Errorf("element %d: %d overflows %s", i, e, d)
		}
	}
	return out, nil
}
