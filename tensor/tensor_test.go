package tensor

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestElementCount(t *testing.T) {
	tests := []struct {
		shape   []int64
		want    int64
		wantErr bool
	}{
		{nil, 1, false},
		{[]int64{}, 1, false},
		{[]int64{0}, 0, false},
		{[]int64{1, 0}, 0, false},
		{[]int64{2, 3}, 6, false},
		{[]int64{1, 16}, 16, false},
		{[]int64{math.MaxInt64}, math.MaxInt64, false},
		{[]int64{math.MaxInt64, 0}, 0, false},
		{[]int64{0, math.MaxInt64, math.MaxInt64}, 0, false},
		{[]int64{-1}, 0, true},
		{[]int64{2, -3}, 0, true},
		{[]int64{0, -1}, 0, true},
		{[]int64{1 << 62, 2}, 0, true},       // exactly 2^63
		{[]int64{1 << 62, 4}, 0, true},       // high word set
		{[]int64{1 << 32, 1 << 31}, 0, true}, // 2^63
		{[]int64{math.MaxInt64, math.MaxInt64}, 0, true},
		{[]int64{3037000500, 3037000500}, 0, true}, // just over sqrt(2^63)
		{[]int64{3037000499, 3037000499}, 3037000499 * 3037000499, false},
	}
	for _, tc := range tests {
		got, err := ElementCount(tc.shape)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ElementCount(%v): got %d, want an error", tc.shape, got)
			} else if !errors.Is(err, ErrShape) {
				t.Errorf("ElementCount(%v): got error %v, want one wrapping ErrShape", tc.shape, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ElementCount(%v): got %d, %v, want %d, nil", tc.shape, got, err, tc.want)
		}
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		d       Datatype
		count   int64
		want    int64
		wantErr bool
	}{
		{FP32, 16, 64, false},
		{Bool, 3, 3, false},
		{FP16, 5, 10, false},
		{Int64, 0, 0, false},
		{Int64, math.MaxInt64 / 8, math.MaxInt64 / 8 * 8, false},
		{Int64, math.MaxInt64/8 + 1, 0, true},
		{FP32, -1, 0, true},
		{Bytes, 1, 0, true},
		{"FLOAT", 1, 0, true},
	}
	for _, tc := range tests {
		got, err := ByteSize(tc.d, tc.count)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ByteSize(%s, %d): got %d, %v, want %d (error %v)", tc.d, tc.count, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestShapeMatches(t *testing.T) {
	tests := []struct {
		meta, shape []int64
		want        bool
	}{
		{nil, nil, true},
		{[]int64{}, nil, true},
		{[]int64{1, 16}, []int64{1, 16}, true},
		{[]int64{-1, 16}, []int64{8, 16}, true},
		{[]int64{-1, 16}, []int64{0, 16}, true},
		{[]int64{-1, -1}, []int64{3, 4}, true},
		{[]int64{1, 16}, []int64{1, 15}, false},
		{[]int64{1, 16}, []int64{16}, false},
		{[]int64{-1}, []int64{2, 3}, false},
		{[]int64{-1}, nil, false},
		{nil, []int64{1}, false},
	}
	for _, tc := range tests {
		if got := ShapeMatches(tc.meta, tc.shape); got != tc.want {
			t.Errorf("ShapeMatches(%v, %v): got %v, want %v", tc.meta, tc.shape, got, tc.want)
		}
	}
}

func TestDatatype(t *testing.T) {
	if got, want := len(Datatypes), 14; got != want {
		t.Fatalf("len(Datatypes): got %d, want %d", got, want)
	}
	for _, d := range Datatypes {
		if !d.Valid() {
			t.Errorf("%s.Valid(): got false, want true", d)
		}
		got, err := ParseDatatype(string(d))
		if err != nil || got != d {
			t.Errorf("ParseDatatype(%q): got %q, %v, want %q, nil", d, got, err, d)
		}
		if got, want := d.Lower(), strings.ToLower(string(d)); got != want {
			t.Errorf("%s.Lower(): got %q, want %q", d, got, want)
		}
	}
	for _, s := range []string{"", "fp32", "FLOAT32", "STRING", "INT128"} {
		if d, err := ParseDatatype(s); err == nil {
			t.Errorf("ParseDatatype(%q): got %q, want an error", s, d)
		}
	}
	sizes := map[Datatype]int{Bool: 1, Uint8: 1, Int8: 1, Uint16: 2, Int16: 2, FP16: 2, BF16: 2,
		Uint32: 4, Int32: 4, FP32: 4, Uint64: 8, Int64: 8, FP64: 8, Bytes: 0, "X": -1}
	for d, want := range sizes {
		if got := d.Size(); got != want {
			t.Errorf("%q.Size(): got %d, want %d", d, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		t       Tensor
		wantErr string
	}{
		{"ok", Tensor{Name: "x", Datatype: FP32, Shape: []int64{2, 3}, Data: make([]float32, 6)}, ""},
		{"scalar", Tensor{Name: "x", Datatype: Int64, Shape: nil, Data: []int64{7}}, ""},
		{"empty", Tensor{Name: "x", Datatype: Bytes, Shape: []int64{0, 4}, Data: [][]byte{}}, ""},
		{"empty nil slice", Tensor{Name: "x", Datatype: FP16, Shape: []int64{0}, Data: []Float16(nil)}, ""},
		{"unknown datatype", Tensor{Name: "x", Datatype: "FLOAT", Shape: []int64{1}, Data: []float32{1}}, "unknown datatype"},
		{"wrong go type", Tensor{Name: "x", Datatype: FP32, Shape: []int64{1}, Data: []float64{1}}, "FP32 data held as []float64"},
		{"fp16 as uint16", Tensor{Name: "x", Datatype: FP16, Shape: []int64{1}, Data: []uint16{1}}, "held as []uint16"},
		{"nil data", Tensor{Name: "x", Datatype: Bool, Shape: []int64{1}}, "held as <nil>"},
		{"short", Tensor{Name: "x", Datatype: Int32, Shape: []int64{1, 16}, Data: make([]int32, 15)}, "needs 16 elements, got 15"},
		{"long", Tensor{Name: "x", Datatype: Int32, Shape: []int64{1, 16}, Data: make([]int32, 17)}, "needs 16 elements, got 17"},
		{"negative dim", Tensor{Name: "x", Datatype: Int32, Shape: []int64{-1}, Data: []int32{}}, "dimension 0 is -1"},
		{"overflow", Tensor{Name: "x", Datatype: Int32, Shape: []int64{1 << 62, 4}, Data: []int32{}}, "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.t.Validate()
			checkErr(t, err, tc.wantErr)
			_, err = New(tc.t.Name, tc.t.Datatype, tc.t.Shape, tc.t.Data)
			checkErr(t, err, tc.wantErr)
		})
	}
}

// checkErr fails unless err matches want: nil for "", else an error whose
// text contains want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("got error %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("got no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("got error %q, want one containing %q", err, want)
	}
}

func TestZero(t *testing.T) {
	for _, d := range Datatypes {
		shape := []int64{2, 3}
		z, err := Zero("z", d, shape)
		if err != nil {
			t.Fatalf("Zero(%s): %v", d, err)
		}
		if err := z.Validate(); err != nil {
			t.Errorf("Zero(%s).Validate(): %v", d, err)
		}
		if got := z.Len(); got != 6 {
			t.Errorf("Zero(%s).Len(): got %d, want 6", d, got)
		}
		v := reflect.ValueOf(z.Data)
		for i := range v.Len() {
			if !v.Index(i).IsZero() {
				t.Errorf("Zero(%s) element %d: got %v, want zero", d, i, v.Index(i))
			}
		}
		shape[0] = 5 // Zero must not alias the caller's shape.
		if z.Shape[0] != 2 {
			t.Errorf("Zero(%s).Shape after caller edit: got %v, want [2 3]", d, z.Shape)
		}
	}
	for _, tc := range []struct {
		d     Datatype
		shape []int64
	}{
		{FP32, []int64{-1}},
		{FP32, []int64{1 << 62, 4}},
		{FP64, []int64{1 << 40, 1 << 20}}, // valid count, far too large to allocate
		{Bytes, []int64{1 << 60}},
		{"FLOAT", []int64{1}},
	} {
		if z, err := Zero("z", tc.d, tc.shape); err == nil {
			t.Errorf("Zero(%s, %v): got %d elements, want an error", tc.d, tc.shape, z.Len())
		}
	}
}

func TestMakeData(t *testing.T) {
	want := map[Datatype]any{
		Bool: []bool{}, Uint8: []uint8{}, Uint16: []uint16{}, Uint32: []uint32{}, Uint64: []uint64{},
		Int8: []int8{}, Int16: []int16{}, Int32: []int32{}, Int64: []int64{},
		FP16: []Float16{}, BF16: []BFloat16{}, FP32: []float32{}, FP64: []float64{}, Bytes: [][]byte{},
	}
	for _, d := range Datatypes {
		got, err := MakeData(d, 4)
		if err != nil {
			t.Fatalf("MakeData(%s, 4): %v", d, err)
		}
		if gt, wt := reflect.TypeOf(got), reflect.TypeOf(want[d]); gt != wt {
			t.Errorf("MakeData(%s): got %v, want %v", d, gt, wt)
		}
		if n := reflect.ValueOf(got).Len(); n != 4 {
			t.Errorf("MakeData(%s, 4): got %d elements, want 4", d, n)
		}
		if !dataMatches(d, got) {
			t.Errorf("dataMatches(%s, MakeData(%s)): got false, want true", d, d)
		}
	}
	for _, tc := range []struct {
		d Datatype
		n int
	}{{FP32, -1}, {"FLOAT", 1}, {FP64, math.MaxInt}, {Bytes, 1 << 60}} {
		if got, err := MakeData(tc.d, tc.n); err == nil {
			t.Errorf("MakeData(%q, %d): got %T, want an error", tc.d, tc.n, got)
		}
	}
}
