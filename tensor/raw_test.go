package tensor

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRawValues(t *testing.T) {
	// Spec examples: INT32 [1, 256] as <i4, and BYTES ["a","bcd"].
	got, err := DecodeRaw("x", Int32, []int64{2}, []byte{1, 0, 0, 0, 0, 1, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffData(got.Data, []int32{1, 256}, false); d != "" {
		t.Errorf("INT32: %s", d)
	}
	raw := []byte("\x01\x00\x00\x00a\x03\x00\x00\x00bcd")
	got, err = DecodeRaw("x", Bytes, []int64{2}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffData(got.Data, [][]byte{[]byte("a"), []byte("bcd")}, false); d != "" {
		t.Errorf("BYTES: %s", d)
	}
	enc, err := EncodeRaw(got)
	if err != nil || !bytes.Equal(enc, raw) {
		t.Errorf("EncodeRaw(BYTES): got %x, %v, want %x", enc, err, raw)
	}
	// Row-major order for [2,3].
	got, err = DecodeRaw("x", Uint8, []int64{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffData(got.Data, []uint8{1, 2, 3, 4, 5, 6}, false); d != "" {
		t.Errorf("UINT8: %s", d)
	}
}

func TestDecodeRawErrors(t *testing.T) {
	tests := []struct {
		name    string
		d       Datatype
		shape   []int64
		raw     []byte
		wantErr string
		rawSize bool // the error wraps ErrRawSize
	}{
		{"60 bytes for [1,16] INT32", Int32, []int64{1, 16}, make([]byte, 60), "needs 64 bytes, got 60", true},
		{"68 bytes for [1,16] INT32", Int32, []int64{1, 16}, make([]byte, 68), "needs 64 bytes, got 68", true},
		{"odd bytes FP16", FP16, []int64{1}, make([]byte, 3), "needs 2 bytes, got 3", true},
		{"hostile shape", FP32, []int64{1000000000}, make([]byte, 12), "needs 4000000000 bytes, got 12", true},
		{"shape overflowing bytes", FP64, []int64{1 << 61}, make([]byte, 8), "needs more than 2^63 bytes", true},
		{"bool 0x02", Bool, []int64{3}, []byte{0, 1, 2}, "BOOL element 2 is byte 0x02", false},
		{"bool 0xff", Bool, []int64{1}, []byte{0xff}, "byte 0xff", false},
		{"bytes truncated prefix", Bytes, []int64{2}, []byte("\x01\x00\x00\x00a\x01\x00\x00"), "element 1: length prefix truncated", true},
		{"bytes trailing", Bytes, []int64{1}, []byte("\x01\x00\x00\x00ab"), "1 trailing bytes after 1 BYTES elements", true},
		{"bytes length beyond end", Bytes, []int64{1}, []byte("\x05\x00\x00\x00abc"), "element 0 declares 5 bytes, 3 remain", true},
		{"bytes huge length", Bytes, []int64{1}, []byte("\xff\xff\xff\xff"), "declares 4294967295 bytes", true},
		{"bytes hostile count", Bytes, []int64{1000000000}, make([]byte, 8), "1000000000 BYTES elements need at least 4000000000 bytes", true},
		{"bytes empty for one", Bytes, []int64{}, nil, "need at least 4 bytes", true},
		{"negative shape", FP32, []int64{-4}, nil, "dimension 0 is -4", false},
		{"overflow shape", FP32, []int64{1 << 62, 4}, nil, "overflows int64", false},
		{"unknown datatype", "FLOAT", []int64{1}, make([]byte, 4), `unknown datatype "FLOAT"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRaw("in", tc.d, tc.shape, tc.raw)
			if err == nil {
				t.Fatalf("got %v, want an error containing %q", got.Data, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), `tensor "in"`) {
				t.Errorf("got error %q, want it to name the tensor", err)
			}
			if got := errors.Is(err, ErrRawSize); got != tc.rawSize {
				t.Errorf("errors.Is(err, ErrRawSize): got %v, want %v", got, tc.rawSize)
			}
		})
	}
}

func TestEncodeRawErrors(t *testing.T) {
	for _, bad := range []Tensor{
		{Name: "a", Datatype: FP32, Data: []float64{1}},
		{Name: "b", Datatype: "FLOAT", Data: []float32{1, 2, 3}},
		{Name: "c", Datatype: Bytes, Data: []string{"x"}},
		{Name: "d", Datatype: Int8},
	} {
		if n := RawSize(bad); n != 0 {
			t.Errorf("RawSize(%s): got %d, want 0", bad.Name, n)
		}
		if got, err := EncodeRaw(bad); err == nil {
			t.Errorf("EncodeRaw(%s): got %x, want an error", bad.Name, got)
		}
		got, err := AppendRaw([]byte("keep"), bad)
		if err == nil || string(got) != "keep" {
			t.Errorf("AppendRaw(%s): got %q, %v, want dst unchanged and an error", bad.Name, got, err)
		}
	}
}

func TestDecodeRawBytesAliasesInput(t *testing.T) {
	raw := []byte("\x01\x00\x00\x00a\x01\x00\x00\x00b")
	got, err := DecodeRaw("x", Bytes, []int64{2}, raw)
	if err != nil {
		t.Fatal(err)
	}
	e := got.Data.([][]byte)
	// Appending to one element must not overwrite the next one's bytes.
	_ = append(e[0], 'Z')
	if string(e[1]) != "b" || raw[9] != 'b' {
		t.Errorf("after append to element 0: element 1 is %q, want \"b\"", e[1])
	}
}

// TestViewRawAliases checks the copy rules of the raw codecs: DecodeRaw copies
// numeric data, ViewRaw and RawBytes share it (where the host's memory is the
// raw encoding), and all three give the same values.
func TestViewRawAliases(t *testing.T) {
	raw := make([]byte, 8) // Go's allocator aligns it for int32
	copy(raw, []byte{1, 0, 0, 0, 0, 1, 0, 0})
	copied, err := DecodeRaw("x", Int32, []int64{2}, raw)
	if err != nil {
		t.Fatal(err)
	}
	view, err := ViewRaw("x", Int32, []int64{2}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if c, v := copied.Data.([]int32), view.Data.([]int32); c[0] != 1 || c[1] != 256 || v[0] != 1 || v[1] != 256 {
		t.Fatalf("DecodeRaw %v, ViewRaw %v; want [1 256]", c, v)
	}
	raw[0] = 7
	if c := copied.Data.([]int32); c[0] != 1 {
		t.Errorf("DecodeRaw's data changed with its input: %v", c)
	}
	if !nativeLittleEndian {
		t.Skip("big-endian host: ViewRaw and RawBytes copy")
	}
	if v := view.Data.([]int32); v[0] != 7 {
		t.Errorf("ViewRaw's data %v does not alias its input", v)
	}
	b, err := RawBytes(view)
	if err != nil {
		t.Fatal(err)
	}
	if &b[0] != &raw[0] {
		t.Errorf("RawBytes copied numeric data")
	}
	e, err := EncodeRaw(view)
	if err != nil {
		t.Fatal(err)
	}
	if &e[0] == &raw[0] || !bytes.Equal(e, raw) {
		t.Errorf("EncodeRaw = %v sharing memory %v; want a copy of %v", e, &e[0] == &raw[0], raw)
	}
	// Unaligned contents are copied, never viewed misaligned.
	odd := []byte{9, 0, 1, 0, 0}
	un, err := ViewRaw("x", Int32, []int64{1}, odd[1:])
	if err != nil {
		t.Fatal(err)
	}
	if v := un.Data.([]int32); v[0] != 256 {
		t.Errorf("ViewRaw of unaligned bytes = %v, want [256]", v)
	}
}
