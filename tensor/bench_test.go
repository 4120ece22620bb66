package tensor

import (
	"math/rand/v2"
	"testing"
)

// benchFP32 is a 1 MiB FP32 tensor (262144 elements) of random values with
// varied magnitudes, so JSON numbers have realistic lengths.
func benchFP32(b *testing.B) Tensor {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float32, 1<<18)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * 100)
	}
	return Tensor{Name: "bench", Datatype: FP32, Shape: []int64{1, 1 << 18}, Data: v}
}

// The JSON benchmarks report MB/s of JSON text (2661163 bytes, 2.5 MiB, for this
// tensor), not of the 1 MiB of float32 it holds.

func BenchmarkJSONDecodeFP32_1MiB(b *testing.B) {
	t := benchFP32(b)
	js, err := AppendJSONData(nil, t)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(js)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSONData(FP32, t.Shape, js, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONEncodeFP32_1MiB(b *testing.B) {
	t := benchFP32(b)
	js, err := AppendJSONData(nil, t)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(js)))
	b.ReportAllocs()
	// Reuse the first output as the buffer, so the steady state allocates
	// nothing (AppendJSONData grows dst by an estimate before writing).
	buf := js
	for b.Loop() {
		if buf, err = AppendJSONData(buf[:0], t); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawDecodeFP32_1MiB(b *testing.B) {
	t := benchFP32(b)
	raw, err := EncodeRaw(t)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRaw(t.Name, FP32, t.Shape, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawEncodeFP32_1MiB appends into a reused buffer, so the steady
// state allocates nothing.
func BenchmarkRawEncodeFP32_1MiB(b *testing.B) {
	t := benchFP32(b)
	buf := make([]byte, 0, RawSize(t))
	b.SetBytes(int64(RawSize(t)))
	b.ReportAllocs()
	var err error
	for b.Loop() {
		if buf, err = AppendRaw(buf[:0], t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContentsFP32_1MiB converts to typed contents and back. FP32
// contents share the tensor's slice, so this measures the checks only.
func BenchmarkContentsFP32_1MiB(b *testing.B) {
	t := benchFP32(b)
	b.SetBytes(int64(RawSize(t)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := ToContents(t)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := FromContents(t.Name, FP32, t.Shape, c); err != nil {
			b.Fatal(err)
		}
	}
}
