package reference_test

import (
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

// Custom parameters reach the model; reserved keys are refused; priority
// and timeout are checked, and timeout bounds the model's run.
func TestParametersAndSchedulePolicy(t *testing.T) {
	srv := referencetest.Start(t)
	base := srv.HTTPURL()
	echo := func(params string) httpResult {
		return post(t, base+"/v2/models/param_echo/infer",
			`{"parameters":`+params+`,"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[0]}]}`)
	}
	var out struct {
		Outputs []struct {
			Data []string `json:"data"`
		} `json:"outputs"`
	}
	wantJSON(t, echo(`{"echo":"héllo","priority":1,"timeout":10000000}`), http.StatusOK, &out)
	if len(out.Outputs) != 1 || len(out.Outputs[0].Data) != 1 || out.Outputs[0].Data[0] != "héllo" {
		t.Fatalf("param_echo answered %+v", out)
	}
	for _, bad := range []string{`{"echo":"x","triton_foo":1}`, `{"echo":"x","headers":"a"}`, `{"echo":1}`,
		`{"echo":"x","priority":-1}`, `{"echo":"x","priority":"1"}`, `{"echo":"x","timeout":1.5}`, `{"echo":"x","timeout":-5}`} {
		wantError(t, echo(bad), http.StatusBadRequest)
	}
	wantError(t, post(t, base+"/v2/models/delay/infer",
		`{"parameters":{"delay_ms":2000,"timeout":1000},"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[1]}]}`),
		http.StatusGatewayTimeout)

	c := dial(t, srv.GRPCAddr())
	req := &oip.InferRequest{Model: "param_echo", Parameters: oip.Parameters{"echo": "grpc", "timeout": int64(10000000)},
		Inputs: []oip.InferInput{{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{0}}}}}
	pb, err := oip.ToProtoRequest(req, false)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.ModelInfer(ctxT(t), pb)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetOutputs()[0].GetContents().GetBytesContents(); len(got) != 1 || string(got[0]) != "grpc" {
		t.Fatalf("gRPC param_echo answered %v", resp.GetOutputs())
	}
	req.Parameters["triton_x"] = "1"
	pb, _ = oip.ToProtoRequest(req, false)
	_, err = c.ModelInfer(ctxT(t), pb)
	wantCode(t, err, codes.InvalidArgument, "triton_")
}
