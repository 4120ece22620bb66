package tensor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// fuzzShape builds a shape of rank%3 dimensions from d0 and d1. The
// dimensions are not capped: the decoders must bound allocation by the input
// size whatever the shape claims, and the fuzz targets assert that.
func fuzzShape(rank uint8, d0, d1 int64) []int64 {
	return []int64{d0, d1}[:rank%3]
}

func fuzzDatatype(i uint8) Datatype { return Datatypes[int(i)%len(Datatypes)] }

// datatypeIndex is the fuzz input that selects d.
func datatypeIndex(d Datatype) uint8 {
	for i, e := range Datatypes {
		if e == d {
			return uint8(i)
		}
	}
	panic("unknown datatype " + d)
}

func FuzzDecodeJSONData(f *testing.F) {
	seeds := []struct {
		d          Datatype
		rank       uint8
		d0, d1     int64
		data       string
		maxLimited bool
	}{
		{Int32, 2, 2, 3, `[[1,2,3],[4,5,6]]`, false},
		{Int32, 2, 1, 16, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]`, false},
		{Int32, 1, 3, 0, `[1,2.0,1e2]`, true},
		{Uint8, 1, 4, 0, `[0,1,2,300]`, false},
		{Int64, 1, 2, 0, `[9223372036854775807,-9223372036854775808]`, false},
		{Uint64, 1, 1, 0, `[18446744073709551615]`, false},
		{Int8, 0, 0, 0, `[-128]`, false},
		{Bool, 1, 3, 0, ` [ true ,false, true ] `, false},
		{Bool, 1, 1, 0, `[1]`, false},
		{FP32, 1, 4, 0, `[0.5,-1.25,3.4028235e38,"NaN"]`, false},
		{FP32, 1, 2, 0, `["Infinity","-Infinity"]`, false},
		{FP32, 1, 1000000000, 0, `[1,2,3]`, false},
		{FP32, 1, 1, 0, `[1e39]`, false},
		{FP64, 1, 3, 0, `[5e-324,1.7976931348623157e308,-0]`, false},
		{FP16, 1, 3, 0, `[1,65504,5.960464477539063e-8]`, false},
		{FP16, 1, 1, 0, `[65520]`, false},
		{BF16, 1, 2, 0, `[1,-2.5]`, false},
		{Bytes, 1, 3, 0, `["abc","","é-✓"]`, false},
		{Bytes, 1, 4, 0, `["\"\\\/\b\f\n\r\t","\u00e9","\ud83d\ude00","\u0000"]`, false},
		{Bytes, 1, 1, 0, `["\ud800"]`, false},
		{Bytes, 1, 1, 0, "[\"\xff\"]", false},
		{FP32, 1, 1, 0, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, false},
		{FP32, 1, 2, 0, `[1,2]x`, false},
		{FP32, 1, 2, 0, `[1,,2]`, false},
		{FP32, 1, 1, 0, `[null]`, false},
		{Int32, 2, 1 << 62, 4, `[1]`, false},
		{Int32, 1, -1, 0, `[]`, false},
		{FP32, 1, 10, 0, `[1,2,3,4,5,6,7,8,9,10]`, true},
	}
	for _, s := range seeds {
		idx := datatypeIndex(s.d)
		if s.maxLimited {
			idx |= 0x80
		}
		f.Add(idx, s.rank, s.d0, s.d1, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, dt, rank uint8, d0, d1 int64, data []byte) {
		d := fuzzDatatype(dt & 0x7f)
		shape := fuzzShape(rank, d0, d1)
		var maxElements int64
		if dt&0x80 != 0 {
			maxElements = 8
		}
		v, err := DecodeJSONData(d, shape, data, maxElements)
		if err != nil {
			if v != nil {
				t.Fatalf("got data %v alongside error %v", v, err)
			}
			return
		}
		in := Tensor{Name: "f", Datatype: d, Shape: shape, Data: v}
		if err := in.Validate(); err != nil {
			t.Fatalf("decoded tensor does not validate: %v", err)
		}
		// Allocation is bounded by the input, not the shape.
		if c := reflect.ValueOf(v).Cap(); c > len(data)/2+1 {
			t.Fatalf("cap %d for %d input bytes, want at most %d", c, len(data), len(data)/2+1)
		}
		if maxElements > 0 && in.Len() > int(maxElements) {
			t.Fatalf("got %d elements, want at most maxElements %d", in.Len(), maxElements)
		}
		// The scanner must accept only valid JSON.
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if d == Bytes {
			checkBytesAgainstEncodingJSON(t, data, v.([][]byte))
		}
		out, err := AppendJSONData(nil, in)
		if err != nil {
			t.Fatalf("AppendJSONData: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("AppendJSONData wrote invalid JSON %q", out)
		}
		again, err := DecodeJSONData(d, shape, out, maxElements)
		if err != nil {
			t.Fatalf("decoding re-encoded %q: %v", out, err)
		}
		// The first decode produced canonical NaNs, so bit patterns must match.
		if diff := diffData(again, v, false); diff != "" {
			t.Fatalf("re-encoded %q: %s", out, diff)
		}
	})
}

// checkBytesAgainstEncodingJSON compares decoded strings with what
// encoding/json makes of the same nested arrays.
func checkBytesAgainstEncodingJSON(t *testing.T, data []byte, got [][]byte) {
	t.Helper()
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatalf("encoding/json rejects %q: %v", data, err)
	}
	var want []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			want = append(want, x)
		default:
			t.Fatalf("encoding/json found %T in accepted BYTES data %q", x, data)
		}
	}
	walk(tree)
	if len(want) != len(got) {
		t.Fatalf("got %d strings, encoding/json %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("element %d: got %q, encoding/json %q", i, got[i], want[i])
		}
	}
}

func FuzzDecodeRaw(f *testing.F) {
	seeds := []struct {
		d      Datatype
		rank   uint8
		d0, d1 int64
		raw    []byte
	}{
		{Int32, 1, 2, 0, []byte{1, 0, 0, 0, 0, 1, 0, 0}},
		{Int32, 2, 1, 16, make([]byte, 60)},
		{Bool, 1, 3, 0, []byte{0, 1, 1}},
		{Bool, 1, 3, 0, []byte{0, 1, 2}},
		{Uint8, 2, 2, 3, []byte{1, 2, 3, 4, 5, 6}},
		{FP16, 1, 4, 0, []byte{0x00, 0x3c, 0x01, 0x00, 0x00, 0x7c, 0x01, 0x7c}},
		{BF16, 1, 2, 0, []byte{0x80, 0x3f, 0xc1, 0x7f}},
		{FP32, 1, 3, 0, []byte{0, 0, 0xc0, 0x7f, 1, 0, 0x80, 0x7f, 0, 0, 0, 0x80}},
		{FP64, 0, 0, 0, []byte{1, 0, 0, 0, 0, 0, 0xf0, 0x7f}},
		{Int64, 1, 1, 0, []byte{1, 0, 0, 0, 0, 0, 0x20, 0}},
		{Uint64, 1, 1, 0, bytes.Repeat([]byte{0xff}, 8)},
		{Bytes, 1, 2, 0, []byte("\x01\x00\x00\x00a\x03\x00\x00\x00bcd")},
		{Bytes, 1, 2, 0, []byte("\x01\x00\x00\x00a\x03\x00\x00")},
		{Bytes, 1, 1, 0, []byte("\x01\x00\x00\x00ab")},
		{Bytes, 1, 1, 0, []byte("\x05\x00\x00\x00abc")},
		{Bytes, 1, 1, 0, []byte("\x02\x00\x00\x00\xff\xfe")},
		{Bytes, 1, 1000000000, 0, make([]byte, 8)},
		{FP32, 1, 1000000000, 0, make([]byte, 12)},
		{FP32, 2, 1 << 62, 4, nil},
	}
	for _, s := range seeds {
		f.Add(datatypeIndex(s.d), s.rank, s.d0, s.d1, s.raw)
	}
	f.Fuzz(func(t *testing.T, dt, rank uint8, d0, d1 int64, raw []byte) {
		d := fuzzDatatype(dt)
		shape := fuzzShape(rank, d0, d1)
		in, err := DecodeRaw("f", d, shape, raw)
		if err != nil {
			return
		}
		if err := in.Validate(); err != nil {
			t.Fatalf("decoded tensor does not validate: %v", err)
		}
		// Allocation is bounded by the input, not the shape.
		if n := in.Len(); n > len(raw) {
			t.Fatalf("got %d elements from %d bytes", n, len(raw))
		}
		// Raw encoding is canonical: re-encoding gives the same bytes.
		enc, err := EncodeRaw(in)
		if err != nil {
			t.Fatalf("EncodeRaw: %v", err)
		}
		if !bytes.Equal(enc, raw) {
			t.Fatalf("EncodeRaw: got %x, want %x", enc, raw)
		}
		again, err := DecodeRaw("f", d, shape, enc)
		if err != nil {
			t.Fatalf("decoding re-encoded bytes: %v", err)
		}
		if diff := diffData(again.Data, in.Data, false); diff != "" {
			t.Fatal(diff)
		}
		// The same values through typed contents are exact.
		if d != FP16 && d != BF16 {
			c, err := ToContents(in)
			if err != nil {
				t.Fatalf("ToContents: %v", err)
			}
			back, err := FromContents("f", d, shape, c)
			if err != nil {
				t.Fatalf("FromContents: %v", err)
			}
			if diff := diffData(back.Data, in.Data, false); diff != "" {
				t.Fatalf("contents: %s", diff)
			}
		}
		// And through JSON, up to NaN payloads and for UTF-8 BYTES only.
		if b, ok := in.Data.([][]byte); ok {
			for _, e := range b {
				if !utf8.Valid(e) {
					return
				}
			}
		}
		js, err := AppendJSONData(nil, in)
		if err != nil {
			t.Fatalf("AppendJSONData: %v", err)
		}
		v, err := DecodeJSONData(d, shape, js, 0)
		if err != nil {
			t.Fatalf("DecodeJSONData(%q): %v", js, err)
		}
		if diff := diffData(v, in.Data, true); diff != "" {
			t.Fatalf("JSON %q: %s", js, diff)
		}
	})
}

// FuzzDecodeJSONDataDifferential checks DecodeJSONData against the decoder
// it replaced (refDecodeJSONData in jsonref_test.go, which parses every
// number with strconv): the same elements bit for bit, or the same error.
// The number seeds sit on the edges of the strconv-free fast paths: 19 and
// 20 digits, exponents ±22, 2^53, float32 midpoints and range limits.
func FuzzDecodeJSONDataDifferential(f *testing.F) {
	numbers := []string{
		"0", "-0", "0.0", "-0.0e5", "1", "-1", "127", "128", "-128", "-129", "255", "256",
		"32767", "-32768", "65535", "2147483647", "-2147483648", "4294967295", "4294967296",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615",
		"18446744073709551616", "12345678901234567890", "1234567890123456789", "10000000000000000000",
		"100000000000000000000", "1e2", "1E+2", "1.5e1", "2.0", "1.5", "0.1", "0.000123", "123.456",
		"9007199254740992", "9007199254740993", "9007199254740993.0", "1e22", "1e23", "1e-22", "1e-23",
		"3.4028235e38", "3.4028236e38", "3.4028234663852886e38", "3.40282357e38", "1e39", "1.17549435e-38",
		"1.1754942e-38", "1e-45", "1.4e-45", "7e-46", "5e-324", "2.4703282292062327e-324",
		"1.7976931348623157e308", "1.7976931348623159e308", "16777217", "16777216.5", "33554433",
		"0.30000001192092896", "0.3000000119209289", "1.00000005960464477539062499",
		"1.0000000596046448", "1.000000059604644775390625", "8388608.5", "8388609.5", "4503599895805953",
		"-12.345678", "123456.78e-3", "65504", "65520", "65519.99", "1e-8", "5.960464477539063e-8",
		"0.1234567890123456789012345", "1e100000", "1e-100000", "00", "01", "1.", ".5", "-", "1e", "+1",
	}
	dts := []Datatype{FP32, FP64, FP16, BF16, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64}
	for i, n := range numbers {
		f.Add(datatypeIndex(dts[i%len(dts)]), uint8(1), int64(1), int64(0), []byte("["+n+"]"))
		f.Add(datatypeIndex(dts[(i+5)%len(dts)]), uint8(1), int64(2), int64(0), []byte("["+n+", -"+n+"]"))
	}
	f.Add(datatypeIndex(Bytes), uint8(1), int64(2), int64(0), []byte(`["a\u00e9","\ud83d\ude00"]`))
	f.Add(datatypeIndex(Bool), uint8(2), int64(1), int64(2), []byte(`[[true, false]]`))
	f.Fuzz(func(t *testing.T, dt, rank uint8, d0, d1 int64, data []byte) {
		d := fuzzDatatype(dt & 0x7f)
		shape := fuzzShape(rank, d0, d1)
		var maxElements int64
		if dt&0x80 != 0 {
			maxElements = 8
		}
		got, err := DecodeJSONData(d, shape, data, maxElements)
		want, wantErr := refDecodeJSONData(d, shape, data, maxElements)
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%s %q: error %v, the old decoder %v", d, data, err, wantErr)
		case err != nil:
			if err.Error() != wantErr.Error() {
				t.Fatalf("%s %q: error %q, the old decoder %q", d, data, err, wantErr)
			}
		default:
			if diff := diffData(got, want, false); diff != "" {
				t.Fatalf("%s %q: %s", d, data, diff)
			}
		}
	})
}
