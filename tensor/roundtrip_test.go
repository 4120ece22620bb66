package tensor

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"
)

// edgeValues holds, for each datatype, the values every encoding must carry
// unchanged. Values JSON cannot carry exactly (NaN payloads, non-UTF-8
// BYTES) are in rawOnlyValues instead.
var edgeValues = map[Datatype]any{
	Bool:   []bool{true, false, false, true},
	Uint8:  []uint8{0, 1, 127, 128, math.MaxUint8},
	Uint16: []uint16{0, 1, math.MaxUint16},
	Uint32: []uint32{0, 1, math.MaxUint32},
	Uint64: []uint64{0, 1, 1<<53 + 1, math.MaxUint64},
	Int8:   []int8{math.MinInt8, -1, 0, 1, math.MaxInt8},
	Int16:  []int16{math.MinInt16, -1, 0, 1, math.MaxInt16},
	Int32:  []int32{math.MinInt32, -1, 0, 1, math.MaxInt32},
	Int64:  []int64{math.MinInt64, -(1<<53 + 1), -1, 0, 1, 1<<53 + 1, math.MaxInt64},
	FP16: []Float16{
		0x0000, 0x8000, // ±0
		0x3c00, 0xc100, // 1, -2.5
		0x0001, 0x8001, 0x03ff, 0x0200, // subnormals
		0x0400, 0x7bff, 0xfbff, // smallest normal, ±max
		0x3555,         // 0.333
		0x7c00, 0xfc00, // ±Inf
		0x7e00, // NaN
	},
	BF16: []BFloat16{
		0x0000, 0x8000, 0x3f80, 0xc020,
		0x0001, 0x007f, // subnormals
		0x0080, 0x7f7f, 0xff7f, 0x3eab,
		0x7f80, 0xff80, 0x7fc0,
	},
	FP32: []float32{
		0, float32(math.Copysign(0, -1)), 0.5, -1.25, 0.1, 3.4028235e38, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, 1e-40, 16777217, 1.0000001,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	},
	FP64: []float64{
		0, math.Copysign(0, -1), 0.5, -1.25, 0.1, math.MaxFloat64, -math.MaxFloat64,
		math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, math.Pi,
		math.Inf(1), math.Inf(-1), math.NaN(),
	},
	Bytes: [][]byte{
		{}, []byte("abc"), []byte("é-✓"), []byte(`say "hi"`), []byte(`back\slash\`),
		[]byte("ctl \x00\x01\x1f\x7f\b\f\n\r\t end"), []byte("</script>&"), []byte("\u2028\u2029"),
		[]byte("😀 astral"), []byte("\uFFFD real replacement char"), []byte("/"),
	},
}

// rawOnlyValues are carried exactly by raw and typed contents but not JSON.
var rawOnlyValues = map[Datatype]any{
	FP16:  []Float16{0x7c01, 0xfe00, 0x7fff}, // NaN payloads and signs
	BF16:  []BFloat16{0x7f81, 0xffc0},
	FP32:  []float32{math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000)},
	FP64:  []float64{math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8000000000000)},
	Bytes: [][]byte{{0xff, 0xfe, 0x00}, []byte("a\xc3"), {0xed, 0xa0, 0x80}},
}

// cycle returns n elements taken from values in order, wrapping around.
func cycle(values any, n int) any {
	v := reflect.ValueOf(values)
	out := reflect.MakeSlice(v.Type(), n, n)
	for i := range n {
		out.Index(i).Set(v.Index(i % v.Len()))
	}
	return out.Interface()
}

// concat appends the elements of b to those of a (same slice type).
func concat(a, b any) any {
	return reflect.AppendSlice(reflect.AppendSlice(reflect.MakeSlice(reflect.TypeOf(a), 0, 0), reflect.ValueOf(a)), reflect.ValueOf(b)).Interface()
}

// elementKeys renders each element as a comparable string: floats by bit
// pattern (every NaN as "NaN" when anyNaN), BYTES by content, so nil and
// empty byte slices compare equal.
func elementKeys(data any, anyNaN bool) []string {
	v := reflect.ValueOf(data)
	keys := make([]string, v.Len())
	for i := range keys {
		var k string
		switch e := v.Index(i).Interface().(type) {
		case float32:
			k = fmt.Sprintf("%#08x", math.Float32bits(e))
			if anyNaN && e != e {
				k = "NaN"
			}
		case float64:
			k = fmt.Sprintf("%#016x", math.Float64bits(e))
			if anyNaN && e != e {
				k = "NaN"
			}
		case Float16:
			k = fmt.Sprintf("%#04x", uint16(e))
			if anyNaN && isNaN16(e) {
				k = "NaN"
			}
		case BFloat16:
			k = fmt.Sprintf("%#04x", uint16(e))
			if anyNaN && isNaNBF16(e) {
				k = "NaN"
			}
		case []byte:
			k = fmt.Sprintf("%q", e)
		default:
			k = fmt.Sprint(e)
		}
		keys[i] = k
	}
	return keys
}

// diffData returns "" when a and b have the same type and elements, else a
// description of the first difference.
func diffData(got, want any, anyNaN bool) string {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Sprintf("got %T, want %T", got, want)
	}
	g, w := elementKeys(got, anyNaN), elementKeys(want, anyNaN)
	if len(g) != len(w) {
		return fmt.Sprintf("got %d elements, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			return fmt.Sprintf("element %d: got %s, want %s", i, g[i], w[i])
		}
	}
	return ""
}

// roundTripCases builds, for every datatype, tensors of shapes [0], [] (one
// element), [2,3] and [n] holding all its edge values.
func roundTripCases(values map[Datatype]any) []Tensor {
	var cases []Tensor
	for _, d := range Datatypes {
		vals := values[d]
		n := int64(reflect.ValueOf(vals).Len())
		for _, shape := range [][]int64{{0}, {}, {2, 3}, {n}} {
			count, _ := ElementCount(shape)
			cases = append(cases, Tensor{
				Name:     fmt.Sprintf("%s%v", d, shape),
				Datatype: d,
				Shape:    shape,
				Data:     cycle(vals, int(count)),
			})
		}
	}
	return cases
}

func allValues() map[Datatype]any {
	m := make(map[Datatype]any)
	for d, v := range edgeValues {
		if extra, ok := rawOnlyValues[d]; ok {
			v = concat(v, extra)
		}
		m[d] = v
	}
	return m
}

func TestRoundTripRaw(t *testing.T) {
	for _, in := range roundTripCases(allValues()) {
		t.Run(in.Name, func(t *testing.T) {
			raw, err := EncodeRaw(in)
			if err != nil {
				t.Fatalf("EncodeRaw: %v", err)
			}
			if got, want := len(raw), RawSize(in); got != want {
				t.Errorf("len(EncodeRaw): got %d, want RawSize %d", got, want)
			}
			out, err := DecodeRaw(in.Name, in.Datatype, in.Shape, raw)
			if err != nil {
				t.Fatalf("DecodeRaw: %v", err)
			}
			if err := out.Validate(); err != nil {
				t.Errorf("decoded tensor: %v", err)
			}
			if d := diffData(out.Data, in.Data, false); d != "" {
				t.Error(d)
			}
			// AppendRaw must append, leaving the prefix alone.
			prefixed, err := AppendRaw([]byte("pre"), in)
			if err != nil || !bytes.Equal(prefixed, append([]byte("pre"), raw...)) {
				t.Errorf("AppendRaw with prefix: got %q, %v, want %q", prefixed, err, append([]byte("pre"), raw...))
			}
		})
	}
}

func TestRoundTripJSON(t *testing.T) {
	for _, in := range roundTripCases(edgeValues) {
		t.Run(in.Name, func(t *testing.T) {
			js, err := AppendJSONData(nil, in)
			if err != nil {
				t.Fatalf("AppendJSONData: %v", err)
			}
			data, err := DecodeJSONData(in.Datatype, in.Shape, js, 0)
			if err != nil {
				t.Fatalf("DecodeJSONData(%s): %v", js, err)
			}
			// Canonical NaNs only: JSON carries NaN but not its payload.
			if d := diffData(data, in.Data, true); d != "" {
				t.Errorf("%s: %s", js, d)
			}
		})
	}
}

func TestRoundTripContents(t *testing.T) {
	for _, in := range roundTripCases(allValues()) {
		t.Run(in.Name, func(t *testing.T) {
			c, err := ToContents(in)
			if in.Datatype == FP16 || in.Datatype == BF16 {
				if err == nil {
					t.Fatalf("ToContents: got %v, want an error", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("ToContents: %v", err)
			}
			out, err := FromContents(in.Name, in.Datatype, in.Shape, c)
			if err != nil {
				t.Fatalf("FromContents: %v", err)
			}
			if err := out.Validate(); err != nil {
				t.Errorf("decoded tensor: %v", err)
			}
			if d := diffData(out.Data, in.Data, false); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestJSONFloat16AllPatterns sends every FP16 and BF16 pattern through JSON:
// the shortest float32 text must read back as the same 16-bit value.
func TestJSONFloat16AllPatterns(t *testing.T) {
	h := make([]Float16, 1<<16)
	b := make([]BFloat16, 1<<16)
	for i := range h {
		h[i] = Float16(i)
		b[i] = BFloat16(i)
	}
	for _, in := range []Tensor{
		{Name: "fp16", Datatype: FP16, Shape: []int64{1 << 16}, Data: h},
		{Name: "bf16", Datatype: BF16, Shape: []int64{1 << 16}, Data: b},
	} {
		js, err := AppendJSONData(nil, in)
		if err != nil {
			t.Fatalf("%s: AppendJSONData: %v", in.Name, err)
		}
		out, err := DecodeJSONData(in.Datatype, in.Shape, js, 0)
		if err != nil {
			t.Fatalf("%s: DecodeJSONData: %v", in.Name, err)
		}
		if d := diffData(out, in.Data, true); d != "" {
			t.Errorf("%s: %s", in.Name, d)
		}
	}
}

// TestJSONBytesInvalidUTF8 checks that BYTES which are not UTF-8 are written
// with U+FFFD, as encoding/json does, and so still give valid JSON.
func TestJSONBytesInvalidUTF8(t *testing.T) {
	in := Tensor{Name: "b", Datatype: Bytes, Shape: []int64{3}, Data: rawOnlyValues[Bytes]}
	js, err := AppendJSONData(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["\ufffd\ufffd\u0000","a\ufffd","\ufffd\ufffd\ufffd"]`; string(js) != want {
		t.Errorf("got %s, want %s", js, want)
	}
	out, err := DecodeJSONData(Bytes, in.Shape, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range out.([][]byte) {
		if !utf8.Valid(e) {
			t.Errorf("element %d: got %q, want valid UTF-8", i, e)
		}
	}
}
