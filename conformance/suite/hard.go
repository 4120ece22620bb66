package suite

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/oipkit/oipkit/tensor"
)

// Hard test data: tensors of more than 4096 elements holding every edge
// value of their datatype, in the two forms the encodings can carry.
//
//   - formBits is what binary data (REST), typed contents and raw contents
//     (gRPC) carry exactly: every integer of the type's range, ±0, ±Inf,
//     subnormals and NaNs with sign and payload (quiet ones: converting a
//     float may quiet a signaling NaN), and BYTES that are not UTF-8, hold
//     NUL or look like length prefixes.
//   - formJSON is what JSON carries exactly (catalog ):
//     finite floats, 64-bit integers within ±2^53, and BYTES that are UTF-8
//     strings (NUL, escapes and astral characters included).
//
// The edge values come first and again last, so that a server that drops
// the tail of a large tensor is caught on an edge value; the rest is a
// deterministic pseudo-random fill over the whole range.

// hardRows × hardCols is the shape of the hard tensors: 4331 elements, more
// than 4096, neither dimension a power of two, rows ≠ columns, so that a
// truncated, padded or transposed answer shows.
const hardRows, hardCols = 61, 71

var hardShape = []int64{hardRows, hardCols}

type dataForm int

const (
	formJSON dataForm = iota
	formBits
)

// hardTensor is the hard tensor of datatype d in form f.
func hardTensor(name string, d tensor.Datatype, f dataForm) tensor.Tensor {
	n := hardRows * hardCols
	h := fnv.New64a()
	fmt.Fprint(h, d, f)
	r := newRand(h.Sum64())
	var data any
	switch d {
	case tensor.Bool:
		data = fill(n, []bool{true, false, false, true}, func() bool { return r.next()&1 == 1 })
	case tensor.Uint8:
		data = fill(n, []uint8{0, 1, 0x7f, 0x80, 0xfe, 0xff}, func() uint8 { return uint8(r.next()) })
	case tensor.Uint16:
		data = fill(n, []uint16{0, 1, 0xff, 0x100, 0x7fff, 0x8000, 0xfffe, 0xffff}, func() uint16 { return uint16(r.next()) })
	case tensor.Uint32:
		data = fill(n, []uint32{0, 1, 1<<24 + 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}, func() uint32 { return uint32(r.next()) })
	case tensor.Uint64:
		if f == formJSON {
			data = fill(n, []uint64{0, 1, 1<<24 + 1, 1 << 32, 1<<53 - 1, 1 << 53}, func() uint64 { return r.next() % (1<<53 + 1) })
		} else {
			data = fill(n, []uint64{0, 1, 1<<24 + 1, 1 << 32, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 2, 1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64},
				r.next)
		}
	case tensor.Int8:
		data = fill(n, []int8{math.MinInt8, math.MinInt8 + 1, -1, 0, 1, math.MaxInt8 - 1, math.MaxInt8}, func() int8 { return int8(r.next()) })
	case tensor.Int16:
		data = fill(n, []int16{math.MinInt16, math.MinInt16 + 1, -256, -1, 0, 1, 255, math.MaxInt16 - 1, math.MaxInt16}, func() int16 { return int16(r.next()) })
	case tensor.Int32:
		data = fill(n, []int32{math.MinInt32, math.MinInt32 + 1, -(1<<24 + 1), -1, 0, 1, 1<<24 + 1, math.MaxInt32 - 1, math.MaxInt32}, func() int32 { return int32(r.next()) })
	case tensor.Int64:
		if f == formJSON {
			data = fill(n, []int64{-(1 << 53), -(1<<53 - 1), -(1<<24 + 1), -1, 0, 1, 1<<24 + 1, 1<<53 - 1, 1 << 53},
				func() int64 { return int64(r.next()%(1<<54+1)) - 1<<53 })
		} else {
			data = fill(n, []int64{math.MinInt64, math.MinInt64 + 1, -(1<<53 + 1), -(1 << 53), -1, 0, 1, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 2, math.MaxInt64 - 1, math.MaxInt64},
				func() int64 { return int64(r.next()) })
		}
	case tensor.FP16:
		edges := []tensor.Float16{0x0000, 0x8000, 0x3c00, 0xbc00, 0x3555, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x03ff, 0x0400}
		if f == formBits {
			edges = append(edges, 0x7c00, 0xfc00, 0x7e00, 0x7e01, 0xfe00, 0x7fff)
		}
		data = fill(n, edges, func() tensor.Float16 { return tensor.Float16(float16Bits(uint16(r.next()), 10, 0x7c00, f)) })
	case tensor.BF16:
		edges := []tensor.BFloat16{0x0000, 0x8000, 0x3f80, 0xbf80, 0x3eab, 0x7f7f, 0xff7f, 0x0001, 0x8001, 0x007f, 0x0080}
		if f == formBits {
			edges = append(edges, 0x7f80, 0xff80, 0x7fc0, 0x7fc1, 0xffc0, 0x7fff)
		}
		data = fill(n, edges, func() tensor.BFloat16 { return tensor.BFloat16(float16Bits(uint16(r.next()), 7, 0x7f80, f)) })
	case tensor.FP32:
		edges := []float32{0, negZero32(), 1, -1, 0.1, 1.0 / 3, math.MaxFloat32, -math.MaxFloat32,
			math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.Float32frombits(0x00800000), math.Float32frombits(0x007fffff), 16777216, 16777218}
		if f == formBits {
			edges = append(edges, float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000),
				math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00000), math.Float32frombits(0x7fffffff))
		}
		data = fill(n, edges, func() float32 { return math.Float32frombits(float32Bits(uint32(r.next()), f)) })
	case tensor.FP64:
		edges := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.Float64frombits(0x0010000000000000), 1 << 53, 1<<53 + 2, math.MaxFloat32}
		if f == formBits {
			edges = append(edges, math.Inf(1), math.Inf(-1), math.Float64frombits(0x7ff8000000000000),
				math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff8000000000000), math.Float64frombits(0x7fffffffffffffff))
		}
		data = fill(n, edges, func() float64 { return math.Float64frombits(float64Bits(r.next(), f)) })
	case tensor.Bytes:
		data = fill(n, hardBytes(f), func() []byte { return randomBytes(r, f) })
	default:
		panic(fmt.Sprintf("conformance: no hard data for %s", d))
	}
	return tensor.Tensor{Name: name, Datatype: d, Shape: hardShape, Data: data}
}

// fill makes n elements: the edges, then gen's values, then the edges
// again at the end.
func fill[T any](n int, edges []T, gen func() T) []T {
	out := make([]T, 0, n)
	out = append(out, edges...)
	for len(out) < n-len(edges) {
		out = append(out, gen())
	}
	return append(out, edges...)
}

func negZero32() float32 { return float32(math.Copysign(0, -1)) }

// float16Bits turns random bits into a 16-bit float of the form: a quiet
// NaN (payload kept) where the bits are a NaN in bits form, a finite value
// where they are not finite in JSON form. mant is the mantissa width, exp
// the exponent mask.
func float16Bits(b uint16, mant uint, exp uint16, f dataForm) uint16 {
	if b&exp != exp {
		return b
	}
	if f == formJSON {
		return b &^ (1 << (15 - 1)) // clear the top exponent bit: finite
	}
	if b&(1<<mant-1) != 0 {
		b |= 1 << (mant - 1) // quiet
	}
	return b
}

func float32Bits(b uint32, f dataForm) uint32 {
	const exp = 0x7f800000
	if b&exp != exp {
		return b
	}
	if f == formJSON {
		return b &^ (1 << 30)
	}
	if b&0x007fffff != 0 {
		b |= 1 << 22
	}
	return b
}

func float64Bits(b uint64, f dataForm) uint64 {
	const exp = 0x7ff0000000000000
	if b&exp != exp {
		return b
	}
	if f == formJSON {
		return b &^ (1 << 62)
	}
	if b&0x000fffffffffffff != 0 {
		b |= 1 << 51
	}
	return b
}

// hardBytes are the BYTES edge elements of the form.
func hardBytes(f dataForm) [][]byte {
	long := make([]byte, 0, 4096)
	if f == formBits {
		for i := 0; len(long) < cap(long); i++ {
			long = append(long, byte(i))
		}
	} else {
		long = []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz ", 111)[:4096])
	}
	s := func(v ...string) [][]byte {
		out := make([][]byte, len(v))
		for i, x := range v {
			out[i] = []byte(x)
		}
		return out
	}
	common := s("", "\x00", "a\x00b", "\x00\x00\x00\x00", "\x01\x00\x00\x00", "é", "✓", "😀", "\"", "\\", "\n\r\t\b\f", "\x01\x1f\x7f", "\u2028\u2029", "</script>&<>", "\ufeff", "\ufffd")
	common = append(common, long)
	if f == formJSON {
		return common
	}
	// Not UTF-8: a lone byte above 0x7f, a reversed BOM, an overlong NUL,
	// an encoded surrogate, a stray continuation byte, a code point beyond
	// U+10FFFF, a truncated sequence.
	return append(common, s("\xff", "\xfe\xff", "\xc0\x80", "\xed\xa0\x80", "\x80", "\xf4\x90\x80\x80", "\xe2\x9c", "x\xffy\x00z")...)
}

// randomBytes is one random element: any bytes in bits form, a valid UTF-8
// string (ASCII, other BMP characters, astral ones) in JSON form.
func randomBytes(r *xorshift, f dataForm) []byte {
	n := int(r.next() % 25)
	if f == formBits {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.next())
		}
		return b
	}
	var b []byte
	for range n {
		var c rune
		switch r.next() % 3 {
		case 0:
			c = rune(r.next() % 0x80)
		case 1:
			c = rune(0x80 + r.next()%(0xd800-0x80))
		default:
			c = rune(0x10000 + r.next()%(0x110000-0x10000))
		}
		b = utf8.AppendRune(b, c)
	}
	return b
}

// xorshift is a small deterministic generator (xorshift64*): the same
// values on every run and every machine.
type xorshift struct{ s uint64 }

func newRand(seed uint64) *xorshift { return &xorshift{s: seed*0x9e3779b97f4a7c15 | 1} }

func (x *xorshift) next() uint64 {
	x.s ^= x.s >> 12
	x.s ^= x.s << 25
	x.s ^= x.s >> 27
	return x.s * 0x2545f4914f6cdd1d
}

// specialsTensor is a [1,8] float tensor of datatype d holding what JSON
// cannot carry (NaN, -NaN, ±Inf) between finite values that it can.
func specialsTensor(name string, d tensor.Datatype) tensor.Tensor {
	t := tensor.Tensor{Name: name, Datatype: d, Shape: []int64{1, 8}}
	switch d {
	case tensor.FP16:
		t.Data = []tensor.Float16{0x3e00, 0x7e00, 0xfe00, 0x7c00, 0xfc00, 0x8000, 0xbc00, 0x7bff} // 1.5 NaN -NaN +Inf -Inf -0 -1 max
	case tensor.BF16:
		t.Data = []tensor.BFloat16{0x3fc0, 0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x8000, 0xbf80, 0x7f7f}
	case tensor.FP32:
		t.Data = []float32{1.5, float32(math.NaN()), math.Float32frombits(0xffc00000), float32(math.Inf(1)), float32(math.Inf(-1)), negZero32(), -1, math.MaxFloat32}
	case tensor.FP64:
		t.Data = []float64{1.5, math.NaN(), math.Float64frombits(0xfff8000000000000), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), -1, math.MaxFloat64}
	}
	return t
}

// finiteIndexes are the elements of specialsTensor JSON can carry.
var finiteIndexes = []int{0, 5, 6, 7}

// oddBytesTensor is a [1,6] BYTES tensor of elements JSON cannot carry (not
// UTF-8) between elements it can.
func oddBytesTensor(name string) tensor.Tensor {
	return tensor.Tensor{Name: name, Datatype: tensor.Bytes, Shape: []int64{1, 6},
		Data: [][]byte{[]byte("ok"), []byte("\xff\xfe"), []byte("a\x00b"), []byte("\xc0\x80"), []byte("é"), []byte("x\x80")}}
}

// utf8Indexes are the elements of oddBytesTensor JSON can carry.
var utf8Indexes = []int{0, 2, 4}

// emptyTensor is a tensor of datatype d with a 0 dimension.
func emptyTensor(name string, d tensor.Datatype, shape []int64) tensor.Tensor {
	t, err := tensor.Zero(name, d, shape)
	if err != nil {
		panic(fmt.Sprintf("conformance: empty %s %v: %v", d, shape, err))
	}
	return t
}

// integerTypes are the integer datatypes, narrowest first.
var integerTypes = []tensor.Datatype{tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64}

// beyondRange are the integers one step beyond each edge of an integer
// datatype's range: min−1 and max+1 (for the unsigned types −1 and 2^bits),
// which no element of the type can hold.
func beyondRange(d tensor.Datatype) (below, above *big.Int) {
	bits := uint(8 * d.Size())
	one := big.NewInt(1)
	if d == tensor.Uint8 || d == tensor.Uint16 || d == tensor.Uint32 || d == tensor.Uint64 {
		return big.NewInt(-1), new(big.Int).Lsh(one, bits)
	}
	above = new(big.Int).Lsh(one, bits-1)
	return new(big.Int).Sub(new(big.Int).Neg(above), one), above
}
