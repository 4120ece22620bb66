package tensor

import (
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// Tensor is one named tensor. Data holds the elements flattened in row-major
// order, as the slice type listed in the package documentation for Datatype.
type Tensor struct {
	Name     string
	Datatype Datatype
	Shape    []int64
	Data     any
}

// New returns a tensor after checking that data has the Go type of datatype d
// and as many elements as shape implies.
func New(name string, d Datatype, shape []int64, data any) (Tensor, error) {
	t := Tensor{Name: name, Datatype: d, Shape: shape, Data: data}
	return t, t.Validate()
}

// Len is the number of elements held in Data, or -1 if Data has the wrong type.
func (t Tensor) Len() int {
	switch v := t.Data.(type) {
	case []bool:
		return len(v)
	case []uint8:
		return len(v)
	case []uint16:
		return len(v)
	case []uint32:
		return len(v)
	case []uint64:
		return len(v)
	case []int8:
		return len(v)
	case []int16:
		return len(v)
	case []int32:
		return len(v)
	case []int64:
		return len(v)
	case []Float16:
		return len(v)
	case []BFloat16:
		return len(v)
	case []float32:
		return len(v)
	case []float64:
		return len(v)
	case [][]byte:
		return len(v)
	}
	return -1
}

// Validate checks the datatype, that Data has the slice type of the datatype
// and that its length equals the element count of Shape.
func (t Tensor) Validate() error {
	if !t.Datatype.Valid() {
		return fmt.Errorf("tensor %q: unknown datatype %q", t.Name, t.Datatype)
	}
	want, err := ElementCount(t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if !dataMatches(t.Datatype, t.Data) {
		return fmt.Errorf("tensor %q: %s data held as %T", t.Name, t.Datatype, t.Data)
	}
	if got := int64(t.Len()); got != want {
		return fmt.Errorf("tensor %q: shape %v needs %d elements, got %d", t.Name, t.Shape, want, got)
	}
	return nil
}

// Zero returns a tensor of datatype d and the given concrete shape whose
// elements are all zero (empty strings for BYTES).
func Zero(name string, d Datatype, shape []int64) (Tensor, error) {
	n, err := ElementCount(shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if n > math.MaxInt {
		return Tensor{}, fmt.Errorf("tensor %q: %w: %d elements do not fit in memory", name, ErrShape, n)
	}
	data, err := MakeData(d, int(n))
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	return Tensor{Name: name, Datatype: d, Shape: slices.Clone(shape), Data: data}, nil
}

// maxMakeBytes bounds MakeData so that an absurd count is an error rather than
// a runtime panic inside make (the runtime's own limit is 2^48 bytes on
// 64-bit platforms).
const maxMakeBytes = 1 << 46

// MakeData allocates a zeroed slice of n elements of the Go type of d. A
// negative n, or one whose slice would exceed 2^46 bytes, is an error.
func MakeData(d Datatype, n int) (any, error) {
	size := uint64(d.Size())
	if d == Bytes {
		size = uint64(unsafe.Sizeof([]byte(nil)))
	}
	if d.Valid() && (n < 0 || uint64(n) > maxMakeBytes/size) {
		return nil, fmt.Errorf("%w: cannot allocate %d %s elements", ErrShape, n, d)
	}
	switch d {
	case Bool:
		return make([]bool, n), nil
	case Uint8:
		return make([]uint8, n), nil
	case Uint16:
		return make([]uint16, n), nil
	case Uint32:
		return make([]uint32, n), nil
	case Uint64:
		return make([]uint64, n), nil
	case Int8:
		return make([]int8, n), nil
	case Int16:
		return make([]int16, n), nil
	case Int32:
		return make([]int32, n), nil
	case Int64:
		return make([]int64, n), nil
	case FP16:
		return make([]Float16, n), nil
	case BF16:
		return make([]BFloat16, n), nil
	case FP32:
		return make([]float32, n), nil
	case FP64:
		return make([]float64, n), nil
	case Bytes:
		return make([][]byte, n), nil
	}
	return nil, fmt.Errorf("unknown datatype %q", d)
}

func dataMatches(d Datatype, data any) bool {
	switch data.(type) {
	case []bool:
		return d == Bool
	case []uint8:
		return d == Uint8
	case []uint16:
		return d == Uint16
	case []uint32:
		return d == Uint32
	case []uint64:
		return d == Uint64
	case []int8:
		return d == Int8
	case []int16:
		return d == Int16
	case []int32:
		return d == Int32
	case []int64:
		return d == Int64
	case []Float16:
		return d == FP16
	case []BFloat16:
		return d == BF16
	case []float32:
		return d == FP32
	case []float64:
		return d == FP64
	case [][]byte:
		return d == Bytes
	}
	return false
}
