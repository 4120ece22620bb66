package oip

import (
	"testing"

	"github.com/oipkit/oipkit/tensor"
)

// FuzzViewRESTRequest checks ViewRESTRequest against DecodeRESTRequest, the
// copying decoder, on the same body placed at every offset mod 8 (so binary
// parts are viewed where aligned and copied where not): both must accept
// and refuse alike and decode the same tensors.
func FuzzViewRESTRequest(f *testing.F) {
	for _, s := range restScanSeeds {
		f.Add([]byte(s), -1, uint8(0))
	}
	for _, in := range []tensor.Tensor{
		{Name: "a", Datatype: tensor.FP32, Shape: []int64{2}, Data: []float32{1, -2.5}},
		{Name: "b", Datatype: tensor.FP64, Shape: []int64{1, 2}, Data: []float64{1e300, -0}},
		{Name: "c", Datatype: tensor.Int8, Shape: []int64{3}, Data: []int8{-1, 0, 1}},
		{Name: "d", Datatype: tensor.FP16, Shape: []int64{1}, Data: []tensor.Float16{0x3c00}},
		{Name: "e", Datatype: tensor.Bytes, Shape: []int64{2}, Data: [][]byte{[]byte("x"), {}}},
		{Name: "f", Datatype: tensor.Bool, Shape: []int64{2}, Data: []bool{true, false}},
	} {
		body, hl, err := EncodeRESTRequest(&InferRequest{Inputs: []InferInput{{Tensor: in}}}, RESTEncoding{BinaryInputs: true})
		if err != nil {
			f.Fatal(err)
		}
		for off := range uint8(8) {
			f.Add(body, hl, off)
		}
	}
	two, hl, err := EncodeRESTRequest(&InferRequest{Inputs: []InferInput{
		{Tensor: tensor.Tensor{Name: "a", Datatype: tensor.Int8, Shape: []int64{3}, Data: []int8{1, 2, 3}}},
		{Tensor: tensor.Tensor{Name: "b", Datatype: tensor.Int64, Shape: []int64{1}, Data: []int64{-7}}},
	}}, RESTEncoding{BinaryInputs: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(two, hl, uint8(0)) // the second input is unaligned after the first
	f.Fuzz(func(t *testing.T, body []byte, headerLen int, off uint8) {
		placed := make([]byte, int(off%8)+len(body))[off%8:]
		copy(placed, body)
		got, err := ViewRESTRequest(placed, headerLen, Limits{MaxElements: 1 << 16})
		want, wantErr := DecodeRESTRequest(body, headerLen, Limits{MaxElements: 1 << 16})
		if msg := differ(got, err, want, wantErr); msg != "" {
			t.Fatalf("%q (header length %d, offset %d): %s", body, headerLen, off%8, msg)
		}
	})
}
