package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// ErrRawSize reports raw contents whose size does not match the shape and
// datatype.
var ErrRawSize = errors.New("raw size mismatch")

// RawSize is the number of bytes AppendRaw writes for t, or 0 when t.Data
// does not have the Go type of t.Datatype (AppendRaw then fails).
func RawSize(t Tensor) int {
	if !dataMatches(t.Datatype, t.Data) {
		return 0
	}
	if b, ok := t.Data.([][]byte); ok {
		n := 0
		for _, e := range b {
			n += 4 + len(e)
		}
		return n
	}
	return t.Len() * t.Datatype.Size()
}

// EncodeRaw returns the raw little-endian encoding of t's elements.
func EncodeRaw(t Tensor) ([]byte, error) {
	if b, ok := nativeBytes(t.Data); ok && len(b) > 0 && dataMatches(t.Datatype, t.Data) {
		return append([]byte(nil), b...), nil // allocated without zeroing
	}
	return AppendRaw(make([]byte, 0, RawSize(t)), t)
}

// RawBytes is EncodeRaw without the copy where there is nothing to convert:
// for numeric data on a little-endian host it returns t's memory itself,
// which changes with t; otherwise a new encoding.
func RawBytes(t Tensor) ([]byte, error) {
	if b, ok := nativeBytes(t.Data); ok && len(b) > 0 && dataMatches(t.Datatype, t.Data) {
		return b, nil
	}
	return EncodeRaw(t)
}

// AppendRaw appends the raw little-endian encoding of t's elements to dst:
// the native element size without padding, BOOL as one byte 0 or 1, and BYTES
// as a 4-byte little-endian length followed by the bytes. On error dst is
// returned unchanged.
func AppendRaw(dst []byte, t Tensor) ([]byte, error) {
	start := len(dst)
	if !dataMatches(t.Datatype, t.Data) {
		return dst, fmt.Errorf("tensor %q: %s data held as %T", t.Name, t.Datatype, t.Data)
	}
	if b, ok := nativeBytes(t.Data); ok {
		return append(dst, b...), nil
	}
	le := binary.LittleEndian
	switch v := t.Data.(type) {
	case []bool:
		for _, e := range v {
			if e {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
	case []uint8:
		dst = append(dst, v...)
	case []int8:
		for _, e := range v {
			dst = append(dst, byte(e))
		}
	case []uint16:
		for _, e := range v {
			dst = le.AppendUint16(dst, e)
		}
	case []int16:
		for _, e := range v {
			dst = le.AppendUint16(dst, uint16(e))
		}
	case []Float16:
		for _, e := range v {
			dst = le.AppendUint16(dst, uint16(e))
		}
	case []BFloat16:
		for _, e := range v {
			dst = le.AppendUint16(dst, uint16(e))
		}
	case []uint32:
		for _, e := range v {
			dst = le.AppendUint32(dst, e)
		}
	case []int32:
		for _, e := range v {
			dst = le.AppendUint32(dst, uint32(e))
		}
	case []float32:
		for _, e := range v {
			dst = le.AppendUint32(dst, math.Float32bits(e))
		}
	case []uint64:
		for _, e := range v {
			dst = le.AppendUint64(dst, e)
		}
	case []int64:
		for _, e := range v {
			dst = le.AppendUint64(dst, uint64(e))
		}
	case []float64:
		for _, e := range v {
			dst = le.AppendUint64(dst, math.Float64bits(e))
		}
	case [][]byte:
		for i, e := range v {
			if uint64(len(e)) > math.MaxUint32 {
				return dst[:start], fmt.Errorf("tensor %q: BYTES element %d is longer than 2^32-1 bytes", t.Name, i)
			}
			dst = le.AppendUint32(dst, uint32(len(e)))
			dst = append(dst, e...)
		}
	}
	return dst, nil
}

// DecodeRaw decodes raw little-endian contents into a tensor of datatype d and
// concrete shape. The byte count must match the shape exactly (for BYTES: the
// framed elements must consume every byte and number exactly the element
// count). Allocation is bounded by len(raw), never by the declared shape, so a
// hostile shape cannot make the decoder allocate more than it was sent. BYTES
// elements alias raw; other datatypes are copied.
func DecodeRaw(name string, d Datatype, shape []int64, raw []byte) (Tensor, error) {
	return decodeRaw(name, d, shape, raw, false)
}

// ViewRaw is DecodeRaw for contents the caller owns and will not change
// while the tensor is in use (a decoded protobuf message's bytes): numeric
// elements alias raw instead of being copied when the host is little-endian
// and raw is aligned for the element type, as Go's allocator aligns it.
func ViewRaw(name string, d Datatype, shape []int64, raw []byte) (Tensor, error) {
	return decodeRaw(name, d, shape, raw, true)
}

func decodeRaw(name string, d Datatype, shape []int64, raw []byte, alias bool) (Tensor, error) {
	n, err := ElementCount(shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	t := Tensor{Name: name, Datatype: d, Shape: shape}
	if d == Bytes {
		elems, err := splitBytes(raw, n)
		if err != nil {
			return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
		}
		t.Data = elems
		return t, nil
	}
	size := d.Size()
	if size < 0 {
		return Tensor{}, fmt.Errorf("tensor %q: unknown datatype %q", name, d)
	}
	if int64(len(raw))/int64(size) != n || len(raw)%size != 0 {
		return Tensor{}, fmt.Errorf("tensor %q: %w: shape %v of %s needs %s bytes, got %d",
			name, ErrRawSize, shape, d, byteCountText(d, n), len(raw))
	}
	switch d {
	case Bool:
		v := make([]bool, n)
		for i, b := range raw {
			switch b {
			case 0:
			case 1:
				v[i] = true
			default:
				return Tensor{}, fmt.Errorf("tensor %q: BOOL element %d is byte 0x%02x, want 0x00 or 0x01", name, i, b)
			}
		}
		t.Data = v
	case Uint8:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) uint8 { return b[0] })
	case Int8:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) int8 { return int8(b[0]) })
	case Uint16:
		t.Data = decodeRawElems(raw, n, alias, binary.LittleEndian.Uint16)
	case Int16:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case FP16:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) Float16 { return Float16(binary.LittleEndian.Uint16(b)) })
	case BF16:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) BFloat16 { return BFloat16(binary.LittleEndian.Uint16(b)) })
	case Uint32:
		t.Data = decodeRawElems(raw, n, alias, binary.LittleEndian.Uint32)
	case Int32:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case FP32:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case Uint64:
		t.Data = decodeRawElems(raw, n, alias, binary.LittleEndian.Uint64)
	case Int64:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case FP64:
		t.Data = decodeRawElems(raw, n, alias, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	}
	return t, nil
}

// nativeLittleEndian reports a host that stores numbers little-endian, as the
// raw encoding does: there, decoding numeric elements is a copy of the bytes.
var nativeLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// nativeBytes views numeric data as its bytes in memory, which on a
// little-endian host are its raw encoding. ok is false on a big-endian host
// and for BOOL and BYTES.
func nativeBytes(data any) (b []byte, ok bool) {
	if !nativeLittleEndian {
		return nil, false
	}
	switch v := data.(type) {
	case []uint8:
		return v, true
	case []int8:
		return sliceBytes(v), true
	case []uint16:
		return sliceBytes(v), true
	case []int16:
		return sliceBytes(v), true
	case []Float16:
		return sliceBytes(v), true
	case []BFloat16:
		return sliceBytes(v), true
	case []uint32:
		return sliceBytes(v), true
	case []int32:
		return sliceBytes(v), true
	case []float32:
		return sliceBytes(v), true
	case []uint64:
		return sliceBytes(v), true
	case []int64:
		return sliceBytes(v), true
	case []float64:
		return sliceBytes(v), true
	}
	return nil, false
}

// sliceBytes views the memory of v as bytes.
func sliceBytes[T int8 | uint16 | int16 | Float16 | BFloat16 | uint32 | int32 | float32 | uint64 | int64 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// decodeRawElems decodes n fixed-size elements from raw, whose length the
// caller has checked to be n times the element size. On a little-endian host
// it is one copy into memory allocated without zeroing (append to a nil
// slice, as bytes.Clone does: zeroing a large fresh allocation costs more
// than the copy), or raw itself when alias is set and raw is suitably
// aligned, viewed as []T (Go's allocator aligns the copy); otherwise
// element by element with get.
func decodeRawElems[T uint8 | int8 | uint16 | int16 | Float16 | BFloat16 | uint32 | int32 | float32 | uint64 | int64 | float64](raw []byte, n int64, alias bool, get func([]byte) T) []T {
	if n == 0 {
		return []T{}
	}
	if nativeLittleEndian {
		var zero T
		aligned := func(b []byte) bool { return uintptr(unsafe.Pointer(&b[0]))%unsafe.Alignof(zero) == 0 }
		b := raw
		// Unaligned contents are copied, which is still one memmove
		// rather than a loop over the elements.
		if !alias || !aligned(b) {
			b = append([]byte(nil), raw...)
		}
		if aligned(b) {
			return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
		}
	}
	v := make([]T, n)
	size := len(raw) / int(n)
	for i := range v {
		v[i] = get(raw[i*size:])
	}
	return v
}

func byteCountText(d Datatype, n int64) string {
	b, err := ByteSize(d, n)
	if err != nil {
		return "more than 2^63"
	}
	return fmt.Sprint(b)
}

// splitBytes splits length-prefixed BYTES elements. It refuses to allocate
// more element headers than the input could possibly hold (4 bytes each).
func splitBytes(raw []byte, n int64) ([][]byte, error) {
	if n > int64(len(raw))/4 {
		return nil, fmt.Errorf("%w: %d BYTES elements need at least %s bytes, got %d", ErrRawSize, n, fourTimes(n), len(raw))
	}
	elems := make([][]byte, n)
	off := 0
	for i := range elems {
		if len(raw)-off < 4 {
			return nil, fmt.Errorf("%w: BYTES element %d: length prefix truncated at byte %d", ErrRawSize, i, off)
		}
		l := binary.LittleEndian.Uint32(raw[off:])
		off += 4
		if uint64(l) > uint64(len(raw)-off) {
			return nil, fmt.Errorf("%w: BYTES element %d declares %d bytes, %d remain", ErrRawSize, i, l, len(raw)-off)
		}
		elems[i] = raw[off : off+int(l) : off+int(l)]
		off += int(l)
	}
	if off != len(raw) {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d BYTES elements", ErrRawSize, len(raw)-off, n)
	}
	return elems, nil
}

func fourTimes(n int64) string {
	if n > math.MaxInt64/4 {
		return "more than 2^63"
	}
	return fmt.Sprint(4 * n)
}
