package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrShape reports a shape that is invalid for a concrete tensor.
var ErrShape = errors.New("invalid shape")

// ElementCount returns the product of the dimensions of a concrete shape. A
// negative dimension or a product that overflows int64 is an error, so callers
// can trust the count before allocating. The empty shape (a scalar) has one
// element.
func ElementCount(shape []int64) (int64, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: dimension %d is %d", ErrShape, i, d)
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: element count of %v overflows int64", ErrShape, shape)
		}
		n = int64(lo)
	}
	return n, nil
}

// ByteSize returns the raw size in bytes of count elements of d, or an error
// when it overflows int64. It is not defined for BYTES.
func ByteSize(d Datatype, count int64) (int64, error) {
	size := int64(d.Size())
	if size <= 0 {
		return 0, fmt.Errorf("datatype %s has no fixed element size", d)
	}
	if count < 0 {
		return 0, fmt.Errorf("%w: negative element count %d", ErrShape, count)
	}
	if count > math.MaxInt64/size {
		return 0, fmt.Errorf("%w: %d elements of %s overflow int64 bytes", ErrShape, count, d)
	}
	return count * size, nil
}

// ShapeMatches reports whether a concrete shape fits a metadata shape in which
// -1 marks a variable dimension: same rank, fixed dimensions equal.
func ShapeMatches(meta, shape []int64) bool {
	if len(meta) != len(shape) {
		return false
	}
	for i, d := range meta {
		if d != -1 && d != shape[i] {
			return false
		}
	}
	return true
}
