package tensor

import (
	"math"
	"testing"
)

func isNaN16(h Float16) bool    { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
func isNaNBF16(b BFloat16) bool { return b&0x7f80 == 0x7f80 && b&0x7f != 0 }

// TestFloat16Exhaustive checks every binary16 pattern: conversion to float32
// is exact and converting back gives the same pattern.
func TestFloat16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := Float16(i)
		f := h.Float32()
		back := Float16FromFloat32(f)
		if isNaN16(h) {
			if f == f {
				t.Errorf("Float16(%#04x).Float32(): got %v, want NaN", uint16(h), f)
			}
			if !isNaN16(back) {
				t.Errorf("Float16FromFloat32(NaN from %#04x): got %#04x, want a NaN", uint16(h), uint16(back))
			}
			continue
		}
		if back != h {
			t.Errorf("Float16FromFloat32(Float16(%#04x).Float32() = %v): got %#04x, want %#04x", uint16(h), f, uint16(back), uint16(h))
		}
		if want := float16Value(h); float64(f) != want && !(math.IsInf(want, 0) && math.IsInf(float64(f), int(math.Copysign(1, want)))) {
			t.Errorf("Float16(%#04x).Float32(): got %v, want %v", uint16(h), f, want)
		}
		if math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Errorf("Float16(%#04x).Float32(): got sign of %v, want sign bit %v", uint16(h), f, h&0x8000 != 0)
		}
	}
}

// float16Value decodes a non-NaN binary16 pattern from the IEEE definition,
// independently of Float32.
func float16Value(h Float16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Inf(int(sign))
	case 0:
		return sign * mant * math.Ldexp(1, -24)
	}
	return sign * (1 + mant/1024) * math.Ldexp(1, exp-15)
}

func TestFloat16Rounding(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want Float16
	}{
		{"one", 1, 0x3c00},
		{"tie 1+2^-11 to even 1", 1 + 0x1p-11, 0x3c00},
		{"tie 1+3*2^-11 to even 1+2^-9", 1 + 3*0x1p-11, 0x3c02},
		{"just above tie rounds up", 1 + 0x1p-11 + 0x1p-20, 0x3c01},
		{"max", 65504, 0x7bff},
		{"below max tie", 65519, 0x7bff},
		{"tie at max overflows", 65520, 0x7c00},
		{"negative overflow", -65520, 0xfc00},
		{"float32 max", math.MaxFloat32, 0x7c00},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"-inf", float32(math.Inf(-1)), 0xfc00},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"smallest normal", 0x1p-14, 0x0400},
		{"largest subnormal", 0x3ffp-24, 0x03ff},
		{"subnormal rounds up to normal", 0x7ffp-25, 0x0400},
		{"smallest subnormal", 0x1p-24, 0x0001},
		{"half smallest subnormal ties to 0", 0x1p-25, 0x0000},
		{"just above half smallest subnormal", 0x1p-25 + 0x1p-35, 0x0001},
		{"3*2^-25 ties to even 2", 3 * 0x1p-25, 0x0002},
		{"5*2^-25 ties to even 2", 5 * 0x1p-25, 0x0002},
		{"negative subnormal", -0x1p-24, 0x8001},
		{"underflow", 0x1p-30, 0x0000},
		{"negative underflow keeps sign", -0x1p-30, 0x8000},
		{"float32 subnormal", math.SmallestNonzeroFloat32, 0x0000},
	}
	for _, tc := range tests {
		if got := Float16FromFloat32(tc.in); got != tc.want {
			t.Errorf("%s: Float16FromFloat32(%v): got %#04x, want %#04x", tc.name, tc.in, uint16(got), uint16(tc.want))
		}
	}
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xffc00000, 0x7fffffff, 0x7f802000} {
		f := math.Float32frombits(bits)
		if got := Float16FromFloat32(f); !isNaN16(got) {
			t.Errorf("Float16FromFloat32(NaN %#08x): got %#04x, want a NaN", bits, uint16(got))
		}
	}
}

// TestBFloat16Exhaustive checks every bfloat16 pattern the same way.
func TestBFloat16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		b := BFloat16(i)
		f := b.Float32()
		back := BFloat16FromFloat32(f)
		if isNaNBF16(b) {
			if f == f {
				t.Errorf("BFloat16(%#04x).Float32(): got %v, want NaN", uint16(b), f)
			}
			if !isNaNBF16(back) {
				t.Errorf("BFloat16FromFloat32(NaN from %#04x): got %#04x, want a NaN", uint16(b), uint16(back))
			}
			continue
		}
		if back != b {
			t.Errorf("BFloat16FromFloat32(BFloat16(%#04x).Float32() = %v): got %#04x, want %#04x", uint16(b), f, uint16(back), uint16(b))
		}
		if got, want := math.Float32bits(f), uint32(b)<<16; got != want {
			t.Errorf("BFloat16(%#04x).Float32() bits: got %#08x, want %#08x", uint16(b), got, want)
		}
	}
}

func TestBFloat16Rounding(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want BFloat16
	}{
		{"one", 1, 0x3f80},
		{"tie 1+2^-8 to even 1", 1 + 0x1p-8, 0x3f80},
		{"tie 1+3*2^-8 to even 1+2^-6", 1 + 3*0x1p-8, 0x3f82},
		{"just above tie rounds up", 1 + 0x1p-8 + 0x1p-20, 0x3f81},
		{"float32 max overflows", math.MaxFloat32, 0x7f80},
		{"-float32 max overflows", -math.MaxFloat32, 0xff80},
		{"bf16 max", math.Float32frombits(0x7f7f0000), 0x7f7f},
		{"inf", float32(math.Inf(1)), 0x7f80},
		{"-0", float32(math.Copysign(0, -1)), 0x8000},
		{"smallest subnormal", math.Float32frombits(0x00010000), 0x0001},
		{"float32 subnormal tie to 0", math.Float32frombits(0x00008000), 0x0000},
	}
	for _, tc := range tests {
		if got := BFloat16FromFloat32(tc.in); got != tc.want {
			t.Errorf("%s: BFloat16FromFloat32(%v): got %#04x, want %#04x", tc.name, tc.in, uint16(got), uint16(tc.want))
		}
	}
	// Plain truncation would turn these NaNs into infinities.
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xff800001, 0x7f80ffff} {
		f := math.Float32frombits(bits)
		if got := BFloat16FromFloat32(f); !isNaNBF16(got) {
			t.Errorf("BFloat16FromFloat32(NaN %#08x): got %#04x, want a NaN", bits, uint16(got))
		}
	}
}
