package tensor

import "math"

// Float16 is an IEEE 754 binary16 value held as its bit pattern.
type Float16 uint16

// BFloat16 is a bfloat16 value (the top 16 bits of a float32) held as its bit
// pattern.
type BFloat16 uint16

// Float32 converts h to float32 exactly.
func (h Float16) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN; keep the payload's top bits.
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalize.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float16FromFloat32 rounds f to the nearest binary16 value (ties to even).
// Values beyond the binary16 range become ±Inf; NaN stays NaN.
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return Float16(sign | 0x7e00 | uint16(mant>>13))
		}
		return Float16(sign | 0x7c00)
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return Float16(sign | 0x7c00)
	}
	if e <= 0 {
		if e < -10 {
			return Float16(sign)
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := mant & (1<<shift - 1)
		m := mant >> shift
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return Float16(sign | uint16(m))
	}
	m := mant >> 13
	rest := mant & 0x1fff
	h := uint32(e)<<10 | m
	if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the correct rounding.
	}
	return Float16(uint32(sign) | h)
}

// Float32 converts b to float32 exactly.
func (b BFloat16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// BFloat16FromFloat32 rounds f to the nearest bfloat16 value (ties to even);
// NaN stays NaN.
func BFloat16FromFloat32(f float32) BFloat16 {
	u := math.Float32bits(f)
	if u&0x7f800000 == 0x7f800000 && u&0x7fffff != 0 {
		return BFloat16(u>>16 | 0x40)
	}
	u += 0x7fff + (u>>16)&1
	return BFloat16(u >> 16)
}
