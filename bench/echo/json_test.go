package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// restTensor is the JSON body's shape of one input, as encoding/json sees it.
type restTensor struct {
	Name     string    `json:"name"`
	Shape    []int64   `json:"shape"`
	Datatype string    `json:"datatype"`
	Data     []float32 `json:"data"`
}

type restBody struct {
	Inputs []restTensor `json:"inputs"`
}

// BenchmarkJSONRoundTrip is the anchor of the REST JSON large-tensor rows: a
// request body of one FP32 tensor encoded and decoded by encoding/json, the
// least a JSON client and server do with it together.
func BenchmarkJSONRoundTrip(b *testing.B) {
	for _, n := range []int{262144, 4194304} {
		b.Run(fmt.Sprintf("fp32_%dMiB", n*4>>20), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			in := restBody{Inputs: []restTensor{{Name: "INPUT0", Shape: []int64{1, int64(n)}, Datatype: "FP32", Data: make([]float32, n)}}}
			for i := range in.Inputs[0].Data {
				in.Inputs[0].Data[i] = r.Float32()
			}
			b.ReportAllocs()
			for b.Loop() {
				body, err := json.Marshal(&in)
				if err != nil {
					b.Fatal(err)
				}
				var out restBody
				if err := json.Unmarshal(body, &out); err != nil {
					b.Fatal(err)
				}
				if len(out.Inputs) != 1 || len(out.Inputs[0].Data) != n {
					b.Fatalf("decoded %d inputs", len(out.Inputs))
				}
			}
		})
	}
}
