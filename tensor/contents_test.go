package tensor

import (
	"strings"
	"testing"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

func TestToContentsFields(t *testing.T) {
	tests := []struct {
		t     Tensor
		check func(*inferencepb.InferTensorContents) bool
	}{
		{Tensor{Datatype: Bool, Data: []bool{true}}, func(c *inferencepb.InferTensorContents) bool { return len(c.BoolContents) == 1 }},
		{Tensor{Datatype: Int8, Data: []int8{-128}}, func(c *inferencepb.InferTensorContents) bool { return c.IntContents[0] == -128 }},
		{Tensor{Datatype: Int16, Data: []int16{-300}}, func(c *inferencepb.InferTensorContents) bool { return c.IntContents[0] == -300 }},
		{Tensor{Datatype: Int32, Data: []int32{7}}, func(c *inferencepb.InferTensorContents) bool { return c.IntContents[0] == 7 }},
		{Tensor{Datatype: Int64, Data: []int64{7}}, func(c *inferencepb.InferTensorContents) bool { return c.Int64Contents[0] == 7 }},
		{Tensor{Datatype: Uint8, Data: []uint8{255}}, func(c *inferencepb.InferTensorContents) bool { return c.UintContents[0] == 255 }},
		{Tensor{Datatype: Uint16, Data: []uint16{65535}}, func(c *inferencepb.InferTensorContents) bool { return c.UintContents[0] == 65535 }},
		{Tensor{Datatype: Uint32, Data: []uint32{7}}, func(c *inferencepb.InferTensorContents) bool { return c.UintContents[0] == 7 }},
		{Tensor{Datatype: Uint64, Data: []uint64{7}}, func(c *inferencepb.InferTensorContents) bool { return c.Uint64Contents[0] == 7 }},
		{Tensor{Datatype: FP32, Data: []float32{0.5}}, func(c *inferencepb.InferTensorContents) bool { return c.Fp32Contents[0] == 0.5 }},
		{Tensor{Datatype: FP64, Data: []float64{0.5}}, func(c *inferencepb.InferTensorContents) bool { return c.Fp64Contents[0] == 0.5 }},
		{Tensor{Datatype: Bytes, Data: [][]byte{[]byte("x")}}, func(c *inferencepb.InferTensorContents) bool { return string(c.BytesContents[0]) == "x" }},
	}
	for _, tc := range tests {
		tc.t.Shape = []int64{1}
		c, err := ToContents(tc.t)
		if err != nil {
			t.Errorf("ToContents(%s): %v", tc.t.Datatype, err)
			continue
		}
		if !tc.check(c) {
			t.Errorf("ToContents(%s): got %v, want the value in %s", tc.t.Datatype, c, contentsField(tc.t.Datatype))
		}
		if n := setFields(c); n != 1 {
			t.Errorf("ToContents(%s): got %d fields set, want 1", tc.t.Datatype, n)
		}
	}
}

func setFields(c *inferencepb.InferTensorContents) int {
	n := 0
	for _, l := range []int{len(c.BoolContents), len(c.IntContents), len(c.Int64Contents), len(c.UintContents),
		len(c.Uint64Contents), len(c.Fp32Contents), len(c.Fp64Contents), len(c.BytesContents)} {
		if l > 0 {
			n++
		}
	}
	return n
}

func TestToContentsErrors(t *testing.T) {
	tests := []struct {
		t       Tensor
		wantErr string
	}{
		{Tensor{Name: "h", Datatype: FP16, Shape: []int64{1}, Data: []Float16{1}}, "FP16 has no typed contents field; use raw contents"},
		{Tensor{Name: "b", Datatype: BF16, Shape: []int64{1}, Data: []BFloat16{1}}, "BF16 has no typed contents field"},
		{Tensor{Name: "w", Datatype: FP32, Shape: []int64{1}, Data: []float64{1}}, "held as []float64"},
		{Tensor{Name: "u", Datatype: "FLOAT", Shape: []int64{1}, Data: []float32{1}}, "unknown datatype"},
	}
	for _, tc := range tests {
		c, err := ToContents(tc.t)
		if err == nil {
			t.Errorf("ToContents(%s): got %v, want an error", tc.t.Name, c)
			continue
		}
		checkErr(t, err, tc.wantErr)
	}
}

func TestFromContentsErrors(t *testing.T) {
	type ic = inferencepb.InferTensorContents
	tests := []struct {
		name    string
		d       Datatype
		shape   []int64
		c       *ic
		wantErr string
	}{
		{"wrong field", Int32, []int64{1}, &ic{Fp32Contents: []float32{1}}, "INT32 data in fp32_contents, want int_contents"},
		{"wrong and right field", FP32, []int64{1}, &ic{Fp32Contents: []float32{1}, Fp64Contents: []float64{1}}, "data in fp64_contents"},
		{"int64 in int_contents", Int64, []int64{1}, &ic{IntContents: []int32{1}}, "data in int_contents, want int64_contents"},
		{"uint8 in int_contents", Uint8, []int64{1}, &ic{IntContents: []int32{1}}, "data in int_contents, want uint_contents"},
		{"bool in bytes", Bool, []int64{1}, &ic{BytesContents: [][]byte{{1}}}, "data in bytes_contents"},
		{"bytes in bool", Bytes, []int64{1}, &ic{BoolContents: []bool{true}, BytesContents: [][]byte{{1}}}, "data in bool_contents"},
		{"15 for [1,16]", Int32, []int64{1, 16}, &ic{IntContents: make([]int32, 15)}, "int_contents holds 15 elements, shape [1 16] needs 16"},
		{"17 for [1,16]", Int32, []int64{1, 16}, &ic{IntContents: make([]int32, 17)}, "holds 17 elements"},
		{"hostile shape", FP32, []int64{1000000000}, &ic{Fp32Contents: []float32{1}}, "needs 1000000000"},
		{"empty for one", FP64, []int64{}, &ic{}, "holds 0 elements, shape [] needs 1"},
		{"nil for one", Bool, []int64{1}, nil, "holds 0 elements"},
		{"int8 128", Int8, []int64{2}, &ic{IntContents: []int32{0, 128}}, "element 1: 128 overflows INT8"},
		{"int8 -129", Int8, []int64{1}, &ic{IntContents: []int32{-129}}, "-129 overflows INT8"},
		{"int16 40000", Int16, []int64{1}, &ic{IntContents: []int32{40000}}, "40000 overflows INT16"},
		{"uint8 256", Uint8, []int64{1}, &ic{UintContents: []uint32{256}}, "256 overflows UINT8"},
		{"uint16 65536", Uint16, []int64{1}, &ic{UintContents: []uint32{65536}}, "65536 overflows UINT16"},
		{"fp16", FP16, []int64{1}, &ic{Fp32Contents: []float32{1}}, "FP16 has no typed contents field"},
		{"bf16", BF16, []int64{0}, nil, "BF16 has no typed contents field"},
		{"negative shape", FP32, []int64{-1}, nil, "dimension 0 is -1"},
		{"unknown datatype", "FLOAT", []int64{1}, &ic{Fp32Contents: []float32{1}}, "unknown datatype"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromContents("in", tc.d, tc.shape, tc.c)
			if err == nil {
				t.Fatalf("got %v, want an error containing %q", got.Data, tc.wantErr)
			}
			checkErr(t, err, tc.wantErr)
			if !strings.Contains(err.Error(), `tensor "in"`) {
				t.Errorf("got error %q, want it to name the tensor", err)
			}
		})
	}
}

func TestFromContentsEmpty(t *testing.T) {
	for _, d := range Datatypes {
		if d == FP16 || d == BF16 {
			continue
		}
		for _, c := range []*inferencepb.InferTensorContents{nil, {}} {
			got, err := FromContents("e", d, []int64{0, 3}, c)
			if err != nil {
				t.Errorf("FromContents(%s, [0 3], %v): %v", d, c, err)
				continue
			}
			if err := got.Validate(); err != nil {
				t.Errorf("FromContents(%s, [0 3], %v): %v", d, c, err)
			}
		}
	}
}
