package reference_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

const classifierRequest = `{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2,4],"data":[1.1,3.3,0.5,2.4, 4,4,-1,5]}],
 "outputs":[{"name":"OUTPUT0","parameters":{"classification":%s}}]}`

// The top classes of each row, highest first, as "value:index:label", over
// REST and gRPC; bad counts are refused.
func TestClassification(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	var out struct {
		Outputs []struct {
			Name     string   `json:"name"`
			Datatype string   `json:"datatype"`
			Shape    []int64  `json:"shape"`
			Data     []string `json:"data"`
		} `json:"outputs"`
	}
	wantJSON(t, post(t, base+"/v2/models/classifier/infer", fmt.Sprintf(classifierRequest, "2")), http.StatusOK, &out)
	o := out.Outputs[0]
	want := []string{"3.300000:1:b", "2.400000:3:d", "5.000000:3:d", "4.000000:0:a"}
	if o.Datatype != "BYTES" || !slices.Equal(o.Shape, []int64{2, 2}) || !slices.Equal(o.Data, want) {
		t.Fatalf("classification 2: %+v, want BYTES [2 2] %q", o, want)
	}
	// More classes than the output has: every class.
	wantJSON(t, post(t, base+"/v2/models/classifier/infer", fmt.Sprintf(classifierRequest, "9")), http.StatusOK, &out)
	if o := out.Outputs[0]; !slices.Equal(o.Shape, []int64{2, 4}) || len(o.Data) != 8 {
		t.Fatalf("classification 9: %+v", o)
	}
	for _, bad := range []string{"0", "-3", `"2"`, "1.5", "true"} {
		wantError(t, post(t, base+"/v2/models/classifier/infer", fmt.Sprintf(classifierRequest, bad)), http.StatusBadRequest, "classification")
	}
	// Not into a registered shared memory region (OIP-EXT-CLS-007).
	rest, err := client.NewREST(base, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rest.SystemSharedMemoryRegister(ctxT(t), "r", newSHM(t, 64).Key, 0, 64); err != nil {
		t.Fatal(err)
	}
	wantError(t, post(t, base+"/v2/models/classifier/infer",
		`{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}],"outputs":[{"name":"OUTPUT0","parameters":{"classification":2,"shared_memory_region":"r","shared_memory_byte_size":64}}]}`),
		http.StatusBadRequest, "shared_memory_region")
	wantError(t, post(t, base+"/v2/models/identity_bytes/infer",
		`{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,1],"data":["x"]}],"outputs":[{"name":"OUTPUT0","parameters":{"classification":1}}]}`),
		http.StatusBadRequest, "classification")

	c := dial(t, srv.GRPCAddr())
	req := &inferencepb.ModelInferRequest{ModelName: "classifier",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 4},
			Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1.1, 3.3, 0.5, 2.4}}}},
		Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0",
			Parameters: map[string]*inferencepb.InferParameter{"classification": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 1}}}}}}
	resp, err := c.ModelInfer(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if o := resp.GetOutputs()[0]; o.GetDatatype() != "BYTES" || !slices.Equal(o.GetShape(), []int64{1, 1}) ||
		len(o.GetContents().GetBytesContents()) != 1 || string(o.GetContents().GetBytesContents()[0]) != "3.300000:1:b" {
		t.Fatalf("gRPC classification: %v", o)
	}
	req.Outputs[0].Parameters["classification"] = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 0}}
	_, err = c.ModelInfer(ctxT(t), req)
	wantCode(t, err, codes.InvalidArgument, "classification")
}
