package tensor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeJSONDataValues(t *testing.T) {
	tests := []struct {
		name  string
		d     Datatype
		shape []int64
		data  string
		want  any
	}{
		{"bool", Bool, []int64{3}, `[true,false,true]`, []bool{true, false, true}},
		{"int64 beyond 2^53", Int64, []int64{3}, `[9007199254740993,-9007199254740993,9223372036854775807]`,
			[]int64{1<<53 + 1, -(1<<53 + 1), math.MaxInt64}},
		{"int64 min", Int64, []int64{1}, `[-9223372036854775808]`, []int64{math.MinInt64}},
		{"uint64 max", Uint64, []int64{2}, `[18446744073709551615,9007199254740993]`, []uint64{math.MaxUint64, 1<<53 + 1}},
		{"integral fraction and exponent", Int32, []int64{8}, `[2.0,1e2,1E+2,1.5e1,100e-2,0.1e1,-3.000,0e5]`,
			[]int32{2, 100, 100, 15, 1, 1, -3, 0}},
		{"integral int64 exact", Int64, []int64{2}, `[9007199254740993.0,9.223372036854775807e18]`,
			[]int64{1<<53 + 1, math.MaxInt64}},
		{"negative zero unsigned", Uint8, []int64{3}, `[-0,-0.0,-0e3]`, []uint8{0, 0, 0}},
		{"int8 range", Int8, []int64{2}, `[-128,127]`, []int8{-128, 127}},
		{"uint8 max", Uint8, []int64{1}, `[255]`, []uint8{255}},
		{"fp32 integers", FP32, []int64{2}, `[1,-2]`, []float32{1, -2}},
		{"fp32 specials", FP32, []int64{3}, `["NaN","Infinity","-Infinity"]`,
			[]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}},
		{"fp32 max and underflow", FP32, []int64{3}, `[3.4028235e38,1e-50,-0]`,
			[]float32{math.MaxFloat32, 0, float32(math.Copysign(0, -1))}},
		{"fp32 rounds", FP32, []int64{1}, `[0.1]`, []float32{0.1}},
		{"fp64", FP64, []int64{3}, `[0.1,1.7976931348623157e308,5e-324]`,
			[]float64{0.1, math.MaxFloat64, math.SmallestNonzeroFloat64}},
		{"fp16", FP16, []int64{6}, `[1,65504,-2.5,5.960464477539063e-8,1e-8,"Infinity"]`,
			[]Float16{0x3c00, 0x7bff, 0xc100, 0x0001, 0x0000, 0x7c00}},
		{"fp16 rounds to even", FP16, []int64{2}, `[1.00048828125,1.00146484375]`, []Float16{0x3c00, 0x3c02}},
		{"bf16", BF16, []int64{3}, `[1,-2.5,"NaN"]`, []BFloat16{0x3f80, 0xc020, 0x7fc0}},
		{"bytes escapes", Bytes, []int64{9}, `["a\nb","\"q\"","\\","\/","\b\f\r\t","\u00e9\u00C9","\ud83d\ude00","é-✓",""]`,
			[][]byte{[]byte("a\nb"), []byte(`"q"`), []byte(`\`), []byte("/"), []byte("\b\f\r\t"),
				[]byte("éÉ"), []byte("😀"), []byte("é-✓"), {}}},
		{"bytes nul escape", Bytes, []int64{1}, `["\u0000x"]`, [][]byte{[]byte("\x00x")}},
		{"empty", FP32, []int64{0}, `[]`, []float32{}},
		{"empty nested", FP32, []int64{2, 0}, `[[],[]]`, []float32{}},
		{"scalar shape", Int32, []int64{}, `[7]`, []int32{7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeJSONData(tc.d, tc.shape, []byte(tc.data), 0)
			if err != nil {
				t.Fatalf("DecodeJSONData(%s): %v", tc.data, err)
			}
			if d := diffData(got, tc.want, true); d != "" {
				t.Errorf("DecodeJSONData(%s): %s", tc.data, d)
			}
		})
	}
}

// TestDecodeJSONDataNesting checks that nested, flat, ragged and spaced forms
// of the same elements decode identically and in row-major order.
func TestDecodeJSONDataNesting(t *testing.T) {
	want := []int32{1, 2, 3, 4, 5, 6}
	for _, data := range []string{
		`[1,2,3,4,5,6]`,
		`[[1,2,3],[4,5,6]]`,
		`[[[1],[2],[3]],[[4],[5],[6]]]`,
		`[[1,2],[3,4],[5,6]]`, // nesting disagrees with shape [2,3]; only the count matters
		`[[1,2,3,4],[5],[],[6]]`,
		"  [ [ 1 ,\n2,\t3 ] ,\r\n[4 , 5,6]\n]\t\r\n ",
		`[[[[[[[[1,2,3,4,5,6]]]]]]]]`,
	} {
		got, err := DecodeJSONData(Int32, []int64{2, 3}, []byte(data), 0)
		if err != nil {
			t.Errorf("DecodeJSONData(%q): %v", data, err)
			continue
		}
		if d := diffData(got, want, false); d != "" {
			t.Errorf("DecodeJSONData(%q): %s", data, d)
		}
	}
	// Exactly MaxJSONDepth levels is fine.
	deep := strings.Repeat("[", MaxJSONDepth) + "1" + strings.Repeat("]", MaxJSONDepth)
	if _, err := DecodeJSONData(Int32, []int64{1}, []byte(deep), 0); err != nil {
		t.Errorf("nesting depth %d: got %v, want no error", MaxJSONDepth, err)
	}
}

func TestDecodeJSONDataErrors(t *testing.T) {
	ints := func(n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("1")
		}
		b.WriteByte(']')
		return b.String()
	}
	tests := []struct {
		name    string
		d       Datatype
		shape   []int64
		data    string
		max     int64
		wantErr string
	}{
		// Counts and shapes.
		{"15 for [1,16]", Int32, []int64{1, 16}, ints(15), 0, "data has 15 elements, shape [1 16] needs 16"},
		{"17 for [1,16]", Int32, []int64{1, 16}, ints(17), 0, "more than 16 elements"},
		{"too many nested", Int32, []int64{2, 2}, `[[1,2],[3,4],[5]]`, 0, "more than 4 elements"},
		{"hostile shape", FP32, []int64{1000000000}, `[1,2,3]`, 0, "data has 3 elements, shape [1000000000] needs 1000000000"},
		{"overflow shape", FP32, []int64{1 << 62, 4}, `[1]`, 0, "overflows int64"},
		{"negative dimension", FP32, []int64{-1}, `[]`, 0, "dimension 0 is -1"},
		{"over max elements", FP32, []int64{10}, ints(10), 5, "more than the limit of 5"},
		{"unknown datatype", "FLOAT", []int64{1}, `[1]`, 0, `unknown datatype "FLOAT"`},
		{"depth 65", Int32, []int64{1}, strings.Repeat("[", 65) + "1" + strings.Repeat("]", 65), 0, "nested deeper than 64"},
		{"depth 100000", Int32, []int64{1}, strings.Repeat("[", 100000), 0, "offset 64: arrays nested deeper than 64"},

		// Integer range and kind.
		{"uint8 300", Uint8, []int64{4}, `[0,1,2,300]`, 0, "element 3: 300 overflows UINT8"},
		{"uint8 256.0", Uint8, []int64{1}, `[256.0]`, 0, "element 0: 256.0 overflows UINT8"},
		{"uint16 65536", Uint16, []int64{1}, `[65536]`, 0, "65536 overflows UINT16"},
		{"uint32 -1", Uint32, []int64{2}, `[0,-1]`, 0, "element 1: -1 overflows UINT32"},
		{"uint64 -1e0", Uint64, []int64{1}, `[-1e0]`, 0, "-1e0 overflows UINT64"},
		{"uint64 2^64", Uint64, []int64{1}, `[18446744073709551616]`, 0, "overflows UINT64"},
		{"int8 -129", Int8, []int64{1}, `[-129]`, 0, "-129 overflows INT8"},
		{"int16 32768", Int16, []int64{1}, `[32768]`, 0, "32768 overflows INT16"},
		{"int32 1e10", Int32, []int64{1}, `[1e10]`, 0, "1e10 overflows INT32"},
		{"int64 2^63", Int64, []int64{1}, `[9223372036854775808]`, 0, "overflows INT64"},
		{"int64 huge exponent", Int64, []int64{1}, `[1e999999999999999999999]`, 0, "overflows INT64"},
		{"int64 long digits", Int64, []int64{1}, `[` + strings.Repeat("9", 500) + `]`, 0, "overflows INT64"},
		{"int32 1.5", Int32, []int64{2}, `[1,1.5]`, 0, "element 1: 1.5 is not an integer"},
		{"int32 1e-1", Int32, []int64{1}, `[1e-1]`, 0, "1e-1 is not an integer"},
		{"uint8 0.5", Uint8, []int64{1}, `[0.5]`, 0, "0.5 is not an integer"},
		{"int64 tiny exponent", Int64, []int64{1}, `[1e-999999999999]`, 0, "is not an integer"},
		{"int32 string", Int32, []int64{1}, `["1"]`, 0, `element 0: found string "1", want a number for INT32`},
		{"int32 bool", Int32, []int64{1}, `[true]`, 0, "found true"},
		{"int32 null", Int32, []int64{2}, `[1,null]`, 0, "element 1: found null"},
		{"int32 NaN string", Int32, []int64{1}, `["NaN"]`, 0, `found string "NaN"`},

		// Floats.
		{"fp32 overflow", FP32, []int64{1}, `[1e39]`, 0, "1e39 overflows FP32"},
		{"fp32 overflow just past max", FP32, []int64{1}, `[3.4028236e38]`, 0, "overflows FP32"},
		{"fp64 overflow", FP64, []int64{1}, `[-1e309]`, 0, "-1e309 overflows FP64"},
		{"fp16 overflow", FP16, []int64{1}, `[65520]`, 0, "65520 overflows FP16"},
		{"fp16 float32 overflow", FP16, []int64{1}, `[1e39]`, 0, "overflows FP16"},
		{"bf16 overflow", BF16, []int64{1}, `[3.4e38]`, 0, "3.4e38 overflows BF16"},
		{"fp32 lower-case nan", FP32, []int64{1}, `["nan"]`, 0, `found string "nan"`},
		{"fp32 escaped NaN", FP32, []int64{1}, `["N\u0061N"]`, 0, "found string"},
		{"fp32 empty string", FP32, []int64{1}, `[""]`, 0, `found string ""`},
		{"fp32 inf string", FP32, []int64{1}, `["Inf"]`, 0, `found string "Inf"`},
		{"fp32 bare NaN", FP32, []int64{1}, `[NaN]`, 0, "unexpected 'N'"},
		{"fp32 bare Infinity", FP32, []int64{1}, `[Infinity]`, 0, "unexpected 'I'"},
		{"fp32 null", FP32, []int64{1}, `[null]`, 0, "found null"},
		{"fp32 bool", FP32, []int64{1}, `[false]`, 0, "found false"},
		{"fp16 string", FP16, []int64{1}, `["1.0"]`, 0, "found string"},

		// BOOL and BYTES kinds.
		{"bool 1", Bool, []int64{1}, `[1]`, 0, "element 0: found number 1, want true or false for BOOL"},
		{"bool string", Bool, []int64{1}, `["true"]`, 0, "found string"},
		{"bool null", Bool, []int64{1}, `[null]`, 0, "found null"},
		{"bytes number", Bytes, []int64{2}, `["a",1]`, 0, "element 1: found number 1, want a string for BYTES"},
		{"bytes null", Bytes, []int64{1}, `[null]`, 0, "found null"},
		{"object", FP32, []int64{1}, `[{"b64":"AA=="}]`, 0, "element 0: found an object"},
		{"object bytes", Bytes, []int64{1}, `[{}]`, 0, "found an object"},

		// Bad escapes and strings.
		{"bad escape", Bytes, []int64{1}, `["\x"]`, 0, `invalid escape \x`},
		{"bad escape single quote", Bytes, []int64{1}, `["\'"]`, 0, "invalid escape"},
		{"short unicode", Bytes, []int64{1}, `["\u12"]`, 0, "invalid \\u escape"},
		{"non-hex unicode", Bytes, []int64{1}, `["\u12g4"]`, 0, "invalid \\u escape"},
		{"lone high surrogate", Bytes, []int64{1}, `["\ud800"]`, 0, "unpaired surrogate"},
		{"high surrogate then letter", Bytes, []int64{1}, `["\ud800\u0041"]`, 0, "unpaired surrogate"},
		{"high surrogate then text", Bytes, []int64{1}, `["\ud800abcdef"]`, 0, "unpaired surrogate"},
		{"lone low surrogate", Bytes, []int64{1}, `["\udc00"]`, 0, "unpaired surrogate"},
		{"raw control char", Bytes, []int64{1}, "[\"a\nb\"]", 0, "control character 0x0a"},
		{"invalid utf-8", Bytes, []int64{1}, "[\"\xff\"]", 0, "not valid UTF-8"},
		{"invalid utf-8 after escape", Bytes, []int64{1}, "[\"\\n\xc3\"]", 0, "not valid UTF-8"},

		// Syntax.
		{"empty input", FP32, []int64{0}, ``, 0, "data is empty"},
		{"blank input", FP32, []int64{0}, "  \n", 0, "data is empty"},
		{"scalar", FP32, []int64{}, `5`, 0, "data must be a JSON array, found '5'"},
		{"object top", FP32, []int64{}, `{}`, 0, "must be a JSON array"},
		{"string top", Bytes, []int64{}, `"a"`, 0, "must be a JSON array"},
		{"null top", FP32, []int64{0}, `null`, 0, "must be a JSON array"},
		{"truncated open", FP32, []int64{1}, `[`, 0, "unexpected end of data"},
		{"truncated after element", FP32, []int64{2}, `[1,2`, 0, "unexpected end of data"},
		{"truncated after comma", FP32, []int64{2}, `[1,`, 0, "unexpected end of data"},
		{"truncated nested", FP32, []int64{2}, `[[1,2]`, 0, "unexpected end of data"},
		{"truncated string", Bytes, []int64{1}, `["abc`, 0, "unterminated string"},
		{"truncated escape", Bytes, []int64{1}, `["abc\`, 0, "unterminated string"},
		{"truncated escaped quote", Bytes, []int64{1}, `["abc\"]`, 0, "unterminated string"},
		{"truncated literal", Bool, []int64{1}, `[tr`, 0, "invalid literal"},
		{"truncated minus", FP32, []int64{1}, `[-`, 0, "invalid number"},
		{"truncated fraction", FP32, []int64{1}, `[1.`, 0, "invalid number"},
		{"truncated exponent", FP32, []int64{1}, `[1e`, 0, "invalid number"},
		{"truncated exponent sign", FP32, []int64{1}, `[1e+`, 0, "invalid number"},
		{"trailing garbage", FP32, []int64{2}, `[1,2]x`, 0, "unexpected 'x' after the data array"},
		{"trailing bracket", FP32, []int64{2}, `[1,2]]`, 0, "after the data array"},
		{"second array", FP32, []int64{2}, `[1,2] [3]`, 0, "after the data array"},
		{"trailing NUL", FP32, []int64{2}, "[1,2]\x00", 0, "byte 0x00 after the data array"},
		{"double comma", FP32, []int64{2}, `[1,,2]`, 0, "unexpected ','"},
		{"leading comma", FP32, []int64{1}, `[,1]`, 0, "unexpected ','"},
		{"trailing comma", FP32, []int64{1}, `[1,]`, 0, "']' after ','"},
		{"missing comma", FP32, []int64{2}, `[1 2]`, 0, "expected ',' or ']', found '2'"},
		{"leading zero", FP32, []int64{1}, `[01]`, 0, "expected ',' or ']', found '1'"},
		{"plus sign", FP32, []int64{1}, `[+1]`, 0, "unexpected '+'"},
		{"bare fraction", FP32, []int64{1}, `[.5]`, 0, "unexpected '.'"},
		{"hex", Int32, []int64{1}, `[0x10]`, 0, "found 'x'"},
		{"underscore", Int32, []int64{1}, `[1_000]`, 0, "found '_'"},
		{"minus letter", FP32, []int64{1}, `[-a]`, 0, "invalid number"},
		{"literal suffix", Bool, []int64{1}, `[truex]`, 0, "found 'x'"},
		{"capital literal", Bool, []int64{1}, `[True]`, 0, "unexpected 'T'"},
		{"colon", FP32, []int64{1}, `[1:2]`, 0, "found ':'"},
		{"unicode whitespace", FP32, []int64{1}, "[\u00a01]", 0, "unexpected byte 0xc2"},
		{"form feed whitespace", FP32, []int64{1}, "[\f1]", 0, "unexpected byte 0x0c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeJSONData(tc.d, tc.shape, []byte(tc.data), tc.max)
			if err == nil {
				t.Fatalf("DecodeJSONData(%.60q): got %v, want an error containing %q", tc.data, got, tc.wantErr)
			}
			if got != nil {
				t.Errorf("DecodeJSONData(%.60q): got data %v alongside error %v, want nil", tc.data, got, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("DecodeJSONData(%.60q): got error %q, want one containing %q", tc.data, err, tc.wantErr)
			}
		})
	}
}

func TestDecodeJSONDataShapeErrorIsErrShape(t *testing.T) {
	_, err := DecodeJSONData(FP32, []int64{-2}, []byte(`[]`), 0)
	if !errors.Is(err, ErrShape) {
		t.Errorf("got %v, want an error wrapping ErrShape", err)
	}
}

// TestDecodeJSONDataHostileShapeAllocation checks that the declared shape
// does not drive allocation: a billion-element shape with three values must
// fail having allocated next to nothing.
func TestDecodeJSONDataHostileShapeAllocation(t *testing.T) {
	for _, d := range []Datatype{FP64, Bytes, Int64, Bool} {
		data := []byte(`[1,2,3]`)
		if d == Bytes {
			data = []byte(`["a","b","c"]`)
		}
		if d == Bool {
			data = []byte(`[true,false,true]`)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := DecodeJSONData(d, []int64{1000000000}, data, 0)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: got no error, want a count mismatch", d)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew >= 1<<20 {
			t.Errorf("%s: heap grew by %d bytes, want < 1 MiB", d, grew)
		}
	}
	// A deeply nested input errors at the depth limit without recursing.
	var before, after runtime.MemStats
	data := bytes.Repeat([]byte("["), 100000)
	runtime.ReadMemStats(&before)
	_, err := DecodeJSONData(FP32, []int64{1}, data, 0)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("100000-deep input: got no error, want one")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew >= 1<<20 {
		t.Errorf("100000-deep input: heap grew by %d bytes, want < 1 MiB", grew)
	}
}

// TestDecodeJSONDataCapacity checks the preallocation bounds directly.
func TestDecodeJSONDataCapacity(t *testing.T) {
	got, err := DecodeJSONData(FP32, []int64{4}, []byte(`[1,2,3,4]`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := cap(got.([]float32)); c != 4 {
		t.Errorf("cap: got %d, want 4 (the element count)", c)
	}
	got, err = DecodeJSONData(FP32, []int64{2, 2}, []byte(`[1,2,3,4]`), 4)
	if err != nil {
		t.Fatalf("maxElements equal to the count: got %v, want no error", err)
	}
	if c := cap(got.([]float32)); c != 4 {
		t.Errorf("cap: got %d, want 4", c)
	}
}

func TestAppendJSONData(t *testing.T) {
	tests := []struct {
		name string
		t    Tensor
		want string
	}{
		{"bool", Tensor{Datatype: Bool, Data: []bool{true, false}}, `[true,false]`},
		{"empty", Tensor{Datatype: FP32, Data: []float32{}}, `[]`},
		{"uint8", Tensor{Datatype: Uint8, Data: []uint8{0, 255}}, `[0,255]`},
		{"int8", Tensor{Datatype: Int8, Data: []int8{-128, 127}}, `[-128,127]`},
		{"int64", Tensor{Datatype: Int64, Data: []int64{math.MinInt64, 1<<53 + 1}}, `[-9223372036854775808,9007199254740993]`},
		{"uint64", Tensor{Datatype: Uint64, Data: []uint64{math.MaxUint64}}, `[18446744073709551615]`},
		{"fp32 shortest", Tensor{Datatype: FP32, Data: []float32{0.1, 1, -0.5, 1e6, 1e21, 3.4028235e38}},
			`[0.1,1,-0.5,1e+06,1e+21,3.4028235e+38]`},
		{"fp32 specials", Tensor{Datatype: FP32, Data: []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}},
			`["NaN","Infinity","-Infinity",-0]`},
		{"fp64", Tensor{Datatype: FP64, Data: []float64{0.1, math.Inf(-1)}}, `[0.1,"-Infinity"]`},
		{"fp16", Tensor{Datatype: FP16, Data: []Float16{0x3c00, 0x3555, 0x0001, 0x7e00}}, `[1,0.33325195,5.9604645e-08,"NaN"]`},
		{"bf16", Tensor{Datatype: BF16, Data: []BFloat16{0x3f80, 0x3eab}}, `[1,0.33398438]`},
		{"bytes", Tensor{Datatype: Bytes, Data: [][]byte{[]byte(`a"b\c`), []byte("\n\x01é"), nil}}, `["a\"b\\c","\n\u0001é",""]`},
	}
	for _, tc := range tests {
		got, err := AppendJSONData([]byte("x="), tc.t)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if want := "x=" + tc.want; string(got) != want {
			t.Errorf("%s: got %s, want %s", tc.name, got, want)
		}
		if !json.Valid(got[2:]) {
			t.Errorf("%s: output %s is not valid JSON", tc.name, got[2:])
		}
	}
	for _, bad := range []Tensor{
		{Name: "a", Datatype: FP32, Data: []float64{1}},
		{Name: "b", Datatype: FP16, Data: []uint16{1}},
		{Name: "c", Datatype: "FLOAT", Data: []float32{1}},
		{Name: "d", Datatype: Bytes, Data: []string{"a"}},
		{Name: "e", Datatype: Int32},
	} {
		got, err := AppendJSONData([]byte("keep"), bad)
		if err == nil {
			t.Errorf("tensor %s: got %s, want an error", bad.Name, got)
		}
		if string(got) != "keep" {
			t.Errorf("tensor %s: got dst %q after error, want it unchanged", bad.Name, got)
		}
	}
}

// TestAppendJSONStringMatchesEncodingJSON compares BYTES escaping with
// encoding/json (HTML escaping off), including invalid UTF-8.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{"", "plain", `"\/`, "\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f\x20\x7f",
		"é-✓😀", "\u2028x\u2029", "<&>", "\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xef\xbf\xbd"}
	for i := range 256 {
		inputs = append(inputs, string([]byte{byte(i)}), string([]byte{'a', byte(i), 'b'}))
	}
	for _, s := range inputs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(AppendJSONString(nil, s)); got != want {
			t.Errorf("AppendJSONString(%q): got %s, want %s", s, got, want)
		}
	}
}

// TestDecodeJSONDataBytesOwnership checks that BYTES elements are copies of
// the input and cannot overwrite each other when appended to.
func TestDecodeJSONDataBytesOwnership(t *testing.T) {
	data := []byte(`["ab","c\nd","ef"]`)
	got, err := DecodeJSONData(Bytes, []int64{3}, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := got.([][]byte)
	for i := range data {
		data[i] = 'X'
	}
	_ = append(e[0], "ZZZZ"...)
	if d := diffData(e, [][]byte{[]byte("ab"), []byte("c\nd"), []byte("ef")}, false); d != "" {
		t.Errorf("after overwriting the input and appending to element 0: %s", d)
	}
}

// TestDecodeJSONFloatsMatchStrconv checks the strconv-free float parsing
// against strconv.ParseFloat on numbers built to sit near float32 midpoints
// (where rounding twice, through float64, could go wrong) and on random
// decimals of every length the fast path takes.
func TestDecodeJSONFloatsMatchStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var texts []string
	for range 20000 {
		x := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
		next := math.Nextafter32(x, float32(math.Inf(1)))
		mid := (float64(x) + float64(next)) / 2 // exact: a float32 midpoint is a float64
		for _, prec := range []int{5, 7, 8, 9, 12, 15, 16, -1} {
			texts = append(texts, strconv.FormatFloat(mid, 'e', prec, 64), strconv.FormatFloat(mid, 'f', -1, 64))
		}
		texts = append(texts, strconv.FormatFloat(float64(x), 'g', -1, 32))
		m := rng.Uint64N(1 << uint(rng.IntN(54)))
		texts = append(texts, fmt.Sprintf("%de%d", m, rng.IntN(50)-25))
	}
	for _, bits := range []int{32, 64} {
		d := FP32
		if bits == 64 {
			d = FP64
		}
		for _, s := range texts {
			v, err := DecodeJSONData(d, []int64{1}, []byte("["+s+"]"), 0)
			want, werr := strconv.ParseFloat(s, bits)
			if werr != nil {
				if err == nil {
					t.Errorf("%s %s: decoded %v, strconv fails: %v", d, s, v, werr)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", d, s, err)
				continue
			}
			var got float64
			if bits == 32 {
				got = float64(v.([]float32)[0])
			} else {
				got = v.([]float64)[0]
			}
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%s %s: got %v, strconv %v", d, s, got, want)
			}
		}
	}
}
