package reference_test

import (
	"net/http"
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// perf_analyzer needs the model configuration; both transports serve it.
func TestModelConfig(t *testing.T) {
	srv := referencetest.Start(t)
	var cfg struct {
		Name         string `json:"name"`
		MaxBatchSize *int   `json:"max_batch_size"`
		Input        []struct {
			Name     string  `json:"name"`
			DataType string  `json:"data_type"`
			Dims     []int64 `json:"dims"`
		} `json:"input"`
		Output []struct {
			Name     string `json:"name"`
			DataType string `json:"data_type"`
		} `json:"output"`
	}
	wantJSON(t, get(t, srv.HTTPURL()+"/v2/models/add_sub/config"), http.StatusOK, &cfg)
	if cfg.Name != "add_sub" || cfg.MaxBatchSize == nil || *cfg.MaxBatchSize != 0 || len(cfg.Input) != 2 || len(cfg.Output) != 2 {
		t.Fatalf("add_sub config: %+v", cfg)
	}
	if in := cfg.Input[0]; in.Name != "INPUT0" || in.DataType != "TYPE_INT32" || !reflect.DeepEqual(in.Dims, []int64{-1, 16}) {
		t.Errorf("INPUT0 config: %+v", in)
	}
	wantJSON(t, get(t, srv.HTTPURL()+"/v2/models/identity_bytes/versions/1/config"), http.StatusOK, &cfg)
	if cfg.Input[0].DataType != "TYPE_STRING" {
		t.Errorf("identity_bytes INPUT0 data_type %q, want TYPE_STRING", cfg.Input[0].DataType)
	}
	wantError(t, get(t, srv.HTTPURL()+"/v2/models/does_not_exist/config"), http.StatusNotFound)

	c := dial(t, srv.GRPCAddr())
	resp, err := c.ModelConfig(ctxT(t), &inferencepb.ModelConfigRequest{Name: "add_sub"})
	if err != nil {
		t.Fatalf("ModelConfig: %v", err)
	}
	got := resp.GetConfig()
	if got.GetName() != "add_sub" || len(got.GetInput()) != 2 || got.GetInput()[1].GetDataType() != inferencepb.DataType_TYPE_INT32 ||
		!reflect.DeepEqual(got.GetOutput()[0].GetDims(), []int64{-1, 16}) {
		t.Errorf("ModelConfig(add_sub) = %v", got)
	}
	// Decoupled models say so, as Triton's do: perf_analyzer streams them.
	resp, err = c.ModelConfig(ctxT(t), &inferencepb.ModelConfigRequest{Name: "stream_count"})
	if err != nil || !resp.GetConfig().GetModelTransactionPolicy().GetDecoupled() || got.GetModelTransactionPolicy() != nil {
		t.Errorf("ModelConfig(stream_count) = %v, %v; add_sub %v", resp, err, got.GetModelTransactionPolicy())
	}
	var policy struct {
		Policy *struct{ Decoupled bool } `json:"model_transaction_policy"`
	}
	wantJSON(t, get(t, srv.HTTPURL()+"/v2/models/tokens/config"), http.StatusOK, &policy)
	if policy.Policy == nil || !policy.Policy.Decoupled {
		t.Errorf("tokens config has no decoupled transaction policy")
	}
	_, err = c.ModelConfig(ctxT(t), &inferencepb.ModelConfigRequest{Name: "does_not_exist"})
	wantCode(t, err, codes.NotFound, "does_not_exist")
}
