package oip

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/oipkit/oipkit/tensor"
)

// The parts are the body: header then every binary output's raw bytes, in
// order, with JSON outputs left in the header; numeric raws alias the
// outputs (no copy), BYTES are encoded.
func TestAppendRESTResponseParts(t *testing.T) {
	fp := []float32{1, 2, 3}
	resp := &InferResponse{Model: "m", Version: "1", Outputs: []InferOutput{
		{Tensor: tensor.Tensor{Name: "A", Datatype: tensor.FP32, Shape: []int64{3}, Data: fp}},
		{Tensor: tensor.Tensor{Name: "B", Datatype: tensor.Int32, Shape: []int64{2}, Data: []int32{7, 8}}},
		{Tensor: tensor.Tensor{Name: "C", Datatype: tensor.Bytes, Shape: []int64{2}, Data: [][]byte{[]byte("xy"), {}}}},
	}}
	for _, c := range []struct {
		name   string
		binary func(string) bool
		raws   int
	}{
		{"all binary", func(string) bool { return true }, 3},
		{"some binary", func(n string) bool { return n != "B" }, 2},
		{"none binary", func(string) bool { return false }, 0},
	} {
		body, hl, err := EncodeRESTResponse(resp, c.binary)
		if err != nil {
			t.Fatal(err)
		}
		header, raws, err := AppendRESTResponseParts([]byte("prefix"), nil, resp, c.binary)
		if err != nil {
			t.Fatal(err)
		}
		if len(raws) != c.raws || (c.raws == 0) != (raws == nil) {
			t.Fatalf("%s: %d raw parts (nil %v), want %d", c.name, len(raws), raws == nil, c.raws)
		}
		if !bytes.HasPrefix(header, []byte("prefix")) {
			t.Fatalf("%s: dst's contents not kept", c.name)
		}
		got := bytes.Clone(header[len("prefix"):])
		if wantHL := len(got); hl >= 0 && hl != wantHL {
			t.Fatalf("%s: header of %d bytes, AppendRESTResponse's is %d", c.name, wantHL, hl)
		}
		for _, r := range raws {
			got = append(got, r...)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("%s: parts\n%q\nbody\n%q", c.name, got, body)
		}
		if c.raws > 0 && uintptr(unsafe.Pointer(&raws[0][0])) != uintptr(unsafe.Pointer(tensorPointer(fp))) {
			t.Fatalf("%s: the FP32 output was copied", c.name)
		}
	}
	if _, _, err := AppendRESTResponseParts(nil, nil, &InferResponse{Outputs: []InferOutput{{Tensor: tensor.Tensor{Name: "X", Datatype: tensor.FP32, Shape: []int64{2}, Data: []int32{1, 2}}}}}, func(string) bool { return true }); err == nil {
		t.Fatal("FP32 output held as []int32 was encoded")
	}
}

func tensorPointer(v []float32) *float32 { return &v[0] }
