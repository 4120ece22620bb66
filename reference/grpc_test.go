package reference_test

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
	"github.com/oipkit/oipkit/version"
)

func TestGRPCHealthAndMetadata(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	ctx := ctxT(t)

	live, err := c.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err != nil || !live.GetLive() {
		t.Fatalf("ServerLive: %v %v", live, err)
	}
	ready, err := c.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	if err != nil || !ready.GetReady() {
		t.Fatalf("ServerReady: %v %v", ready, err)
	}
	for _, r := range []*inferencepb.ModelReadyRequest{{Name: "add_sub"}, {Name: "versioned", Version: "2"}, {Name: "versioned", Version: "1"}, {Name: "versioned"}} {
		resp, err := c.ModelReady(ctx, r)
		if err != nil || !resp.GetReady() {
			t.Errorf("ModelReady(%v): %v %v", r, resp, err)
		}
	}
	_, err = c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "does_not_exist"})
	wantCode(t, err, codes.NotFound, "does_not_exist")
	_, err = c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "versioned", Version: "99"})
	wantCode(t, err, codes.NotFound, "99")

	smd, err := c.ServerMetadata(ctx, &inferencepb.ServerMetadataRequest{})
	if err != nil || smd.GetName() != "oipkit-reference" || smd.GetVersion() != version.Version || !slices.Equal(smd.GetExtensions(), extNames()) {
		t.Fatalf("ServerMetadata: %v %v", smd, err)
	}

	md, err := c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "add_sub"})
	if err != nil {
		t.Fatal(err)
	}
	got := oip.ModelMetadataFromProto(md)
	if got.Name != "add_sub" || got.Platform != "oipkit_native" || len(got.Inputs) != 2 || got.Inputs[1].Name != "INPUT1" ||
		got.Inputs[1].Datatype != tensor.Int32 || !slices.Equal(got.Inputs[1].Shape, []int64{-1, 16}) || len(got.Outputs) != 2 {
		t.Fatalf("ModelMetadata(add_sub) = %+v", got)
	}
	md, err = c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "versioned", Version: "1"})
	if err != nil || !slices.Equal(md.GetVersions(), []string{"1", "2"}) {
		t.Fatalf("ModelMetadata(versioned 1) = %v %v", md, err)
	}
	_, err = c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "does_not_exist"})
	wantCode(t, err, codes.NotFound, "does_not_exist")
	_, err = c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "versioned", Version: "3"})
	wantCode(t, err, codes.NotFound)

}

func TestGRPCStandardHealthService(t *testing.T) {
	srv := referencetest.Start(t)
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", "inference.GRPCInferenceService"} {
		resp, err := hc.Check(ctxT(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) = %v, %v", svc, resp, err)
		}
	}
}

// TestGRPCInferTypedAndRaw checks that the response uses the request's
// form: typed contents in → typed out, raw in → raw out.
func TestGRPCInferTypedAndRaw(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	for _, raw := range []bool{false, true} {
		req := addSubRequest()
		req.ID = "abc"
		pb, err := oip.ToProtoRequest(req, raw)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.ModelInfer(ctxT(t), pb)
		if err != nil {
			t.Fatalf("raw=%v: %v", raw, err)
		}
		if out.GetModelName() != "add_sub" || out.GetModelVersion() != "1" || out.GetId() != "abc" || len(out.GetOutputs()) != 2 {
			t.Fatalf("raw=%v: %v", raw, out)
		}
		if raw {
			if len(out.GetRawOutputContents()) != 2 || out.GetOutputs()[0].GetContents() != nil {
				t.Fatalf("raw request got a non-raw response: %v", out)
			}
			if len(out.GetRawOutputContents()[0]) != 64 || binary.LittleEndian.Uint32(out.GetRawOutputContents()[0][4:]) != 2 {
				t.Fatalf("raw OUTPUT0 = %x", out.GetRawOutputContents()[0])
			}
		} else if len(out.GetRawOutputContents()) != 0 || len(out.GetOutputs()[0].GetContents().GetIntContents()) != 16 {
			t.Fatalf("typed request got a non-typed response: %v", out)
		}
		resp, err := oip.FromProtoResponse(out)
		if err != nil {
			t.Fatal(err)
		}
		checkAddSub(t, resp)
	}
}

func TestGRPCInferVersionedAndOutputs(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	for _, v := range []struct{ version, ran string }{{"", "2"}, {"1", "1"}, {"2", "2"}} {
		req := &oip.InferRequest{Model: "versioned", Version: v.version, Inputs: []oip.InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{2}, Data: []int32{5, -5}}}}}
		pb, _ := oip.ToProtoRequest(req, false)
		out, err := c.ModelInfer(ctxT(t), pb)
		if err != nil {
			t.Fatal(err)
		}
		d := int32(v.ran[0] - '0')
		if out.GetModelVersion() != v.ran || !slices.Equal(out.GetOutputs()[0].GetContents().GetIntContents(), []int32{5 + d, -5 + d}) {
			t.Errorf("version %q: %v", v.version, out)
		}
	}
	req := addSubRequest()
	req.Outputs = []oip.RequestedOutput{{Name: "OUTPUT1"}}
	pb, _ := oip.ToProtoRequest(req, false)
	out, err := c.ModelInfer(ctxT(t), pb)
	if err != nil || len(out.GetOutputs()) != 1 || out.GetOutputs()[0].GetName() != "OUTPUT1" {
		t.Fatalf("requested OUTPUT1 only: %v %v", out, err)
	}
}

// TestGRPCIdentityEveryDatatype round-trips every datatype typed (where a
// typed field exists) and raw.
func TestGRPCIdentityEveryDatatype(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	for _, d := range tensor.Datatypes {
		for _, raw := range []bool{false, true} {
			in := identitySample(d)
			pb, err := oip.ToProtoRequest(&oip.InferRequest{Model: "identity_" + d.Lower(), Inputs: []oip.InferInput{{Tensor: in}}}, raw)
			if err != nil {
				t.Fatal(err)
			}
			usedRaw := len(pb.GetRawInputContents()) > 0
			out, err := c.ModelInfer(ctxT(t), pb)
			if err != nil {
				t.Errorf("%s raw=%v: %v", d, raw, err)
				continue
			}
			if gotRaw := len(out.GetRawOutputContents()) > 0; gotRaw != usedRaw {
				t.Errorf("%s: request raw=%v, response raw=%v", d, usedRaw, gotRaw)
			}
			resp, err := oip.FromProtoResponse(out)
			if err != nil {
				t.Fatal(err)
			}
			o := resp.Outputs[0]
			if o.Name != "OUTPUT0" || o.Datatype != d || !slices.Equal(o.Shape, in.Shape) || !reflect.DeepEqual(o.Data, in.Data) {
				t.Errorf("%s raw=%v: got %s %v %v, want %v", d, raw, o.Datatype, o.Shape, o.Data, in.Data)
			}
		}
	}
}

// int32Input is a typed INT32 input.
func int32Input(name string, shape []int64, v ...int32) *inferencepb.ModelInferRequest_InferInputTensor {
	return &inferencepb.ModelInferRequest_InferInputTensor{Name: name, Datatype: "INT32", Shape: shape,
		Contents: &inferencepb.InferTensorContents{IntContents: v}}
}

func sixteen(v int32) []int32 {
	s := make([]int32, 16)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestGRPCValidationErrors(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	in0 := int32Input("INPUT0", []int64{1, 16}, sixteen(0)...)
	in1 := int32Input("INPUT1", []int64{1, 16}, sixteen(1)...)
	fp32 := &inferencepb.ModelInferRequest_InferInputTensor{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 16},
		Contents: &inferencepb.InferTensorContents{Fp32Contents: make([]float32, 16)}}
	raw16 := make([]byte, 64)
	cases := []struct {
		name     string
		req      *inferencepb.ModelInferRequest
		code     codes.Code
		mentions []string
	}{
		{"unknown model", &inferencepb.ModelInferRequest{ModelName: "does_not_exist", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in1}}, codes.NotFound, []string{"does_not_exist"}},
		{"unknown version", &inferencepb.ModelInferRequest{ModelName: "add_sub", ModelVersion: "7", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in1}}, codes.NotFound, []string{"7"}},
		{"unknown input", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in1, int32Input("INPUT2", []int64{1}, 1)}}, codes.InvalidArgument, []string{"INPUT2"}},
		{"missing input", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0}}, codes.InvalidArgument, []string{"INPUT1"}},
		{"duplicate input", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in0, in1}}, codes.InvalidArgument, []string{"INPUT0"}},
		{"wrong datatype", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{fp32, in1}}, codes.InvalidArgument, []string{"INPUT0", "FP32"}},
		{"wrong rank", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", []int64{16}, sixteen(0)...), in1}}, codes.InvalidArgument, []string{"INPUT0", "rank"}},
		{"fixed dim mismatch", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", []int64{1, 15}, sixteen(0)[:15]...), in1}}, codes.InvalidArgument, []string{"INPUT0"}},
		{"count mismatch", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{int32Input("INPUT0", []int64{1, 16}, 1, 2, 3), in1}}, codes.InvalidArgument, []string{"INPUT0"}},
		{"wrong typed field", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}, Contents: &inferencepb.InferTensorContents{Fp32Contents: make([]float32, 16)}}, in1}}, codes.InvalidArgument, []string{"INPUT0"}},
		{"unknown output", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in1}, Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "NOPE"}}}, codes.InvalidArgument, []string{"NOPE"}},
		{"duplicate output", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in0, in1}, Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT1"}, {Name: "OUTPUT1"}}}, codes.InvalidArgument, []string{"OUTPUT1"}},
		{"mixed raw and typed", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}}, in1}, RawInputContents: [][]byte{raw16}}, codes.InvalidArgument, nil},
		{"raw count mismatch", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}}, {Name: "INPUT1", Datatype: "INT32", Shape: []int64{1, 16}}}, RawInputContents: [][]byte{raw16}}, codes.InvalidArgument, nil},
		{"raw size mismatch", &inferencepb.ModelInferRequest{ModelName: "add_sub", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}}, {Name: "INPUT1", Datatype: "INT32", Shape: []int64{1, 16}}}, RawInputContents: [][]byte{raw16, raw16[:60]}}, codes.InvalidArgument, []string{"INPUT1"}},
		{"bad delay_ms", &inferencepb.ModelInferRequest{ModelName: "delay", Parameters: map[string]*inferencepb.InferParameter{"delay_ms": {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "soon"}}}, Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1}, Contents: &inferencepb.InferTensorContents{Fp32Contents: []float32{1}}}}}, codes.InvalidArgument, []string{"delay_ms"}},
	}
	for _, c2 := range cases {
		t.Run(c2.name, func(t *testing.T) {
			_, err := c.ModelInfer(ctxT(t), c2.req)
			wantCode(t, err, c2.code, c2.mentions...)
		})
	}
}

func TestGRPCElementLimit(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxTensorElements = 8 })
	pb, _ := oip.ToProtoRequest(addSubRequest(), true)
	_, err := dial(t, srv.GRPCAddr()).ModelInfer(ctxT(t), pb)
	wantCode(t, err, codes.ResourceExhausted, "INPUT0")
}
