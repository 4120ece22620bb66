package conformance

import (
	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// grpcCase is a malformed ModelInfer and the requirement it violates.
type grpcCase struct {
	text  string
	req   string
	build func() *pb.ModelInferRequest
	codes []codes.Code // recommended codes (OIP-GRPC-ERR-002)
	// versions marks cases that need a server that versions models.
	versions bool
	// soft, when set, grades a server that accepts the request as a warning
	// under req, for the reason given (see finding.soft).
	soft string
}

var invalid = []codes.Code{codes.InvalidArgument}

// addSubPBWith returns the typed (or raw) add_sub request after mutate.
func addSubPBWith(raw bool, mutate func(*pb.ModelInferRequest)) func() *pb.ModelInferRequest {
	return func() *pb.ModelInferRequest {
		req, _, _ := addSubPB(raw)
		mutate(req)
		return req
	}
}

var grpcCases = []grpcCase{
	{text: "an unknown model", req: "OIP-GRPC-INFER-013", codes: []codes.Code{codes.NotFound, codes.InvalidArgument},
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.ModelName = "does_not_exist" })},
	{text: "an unknown version", req: "OIP-GRPC-INFER-002", codes: []codes.Code{codes.NotFound, codes.InvalidArgument}, versions: true,
		build: func() *pb.ModelInferRequest {
			req := pbRequest("versioned", false, int32s("INPUT0", []int64{1}, 1))
			req.ModelVersion = "99"
			return req
		}},
	{text: "a missing input", req: "OIP-GRPC-INFER-013", codes: invalid,
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs = r.Inputs[:1] })},
	{text: "an unknown input name", req: "OIP-GRPC-INFER-013", codes: invalid,
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Name = "NOPE" })},
	{text: "15 typed elements for shape [1,16]", req: "OIP-GRPC-INFER-008", codes: invalid,
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
			c := r.Inputs[0].Contents
			c.IntContents = c.IntContents[:15]
		})},
	{text: "17 typed elements for shape [1,16]", req: "OIP-GRPC-INFER-008", codes: invalid,
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
			c := r.Inputs[0].Contents
			c.IntContents = append(c.IntContents, 16)
		})},
	// The catalog marks this rejection "(implied; Triton errors)": the MUST
	// of OIP-GRPC-INFER-009 binds the sender to the matching field; what a
	// server does with a mismatch is only implied.
	{text: "INT32 data in fp32_contents", req: "OIP-GRPC-INFER-009", codes: invalid, soft: "implied (catalog: OIP-GRPC-INFER-009 test)",
		build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
			c := r.Inputs[0].Contents
			fp := make([]float32, len(c.IntContents))
			for i, v := range c.IntContents {
				fp[i] = float32(v)
			}
			r.Inputs[0].Contents = &pb.InferTensorContents{Fp32Contents: fp}
		})},
	{text: "raw and typed contents mixed", req: "OIP-GRPC-RAW-002", codes: invalid,
		build: addSubPBWith(true, func(r *pb.ModelInferRequest) {
			// INPUT1 moves from raw to int_contents; INPUT0 stays raw.
			in1 := r.RawInputContents[1]
			r.RawInputContents = r.RawInputContents[:1]
			v := make([]int32, len(in1)/4)
			for i := range v {
				v[i] = int32(uint32(in1[4*i]) | uint32(in1[4*i+1])<<8 | uint32(in1[4*i+2])<<16 | uint32(in1[4*i+3])<<24)
			}
			r.Inputs[1].Contents = &pb.InferTensorContents{IntContents: v}
		})},
	{text: "raw contents together with typed contents on every input", req: "OIP-GRPC-INFER-007", codes: invalid,
		build: func() *pb.ModelInferRequest {
			typed, _, _ := addSubPB(false)
			raw, _, _ := addSubPB(true)
			typed.RawInputContents = raw.RawInputContents
			return typed
		}},
	{text: "a 60-byte raw buffer for a [1,16] INT32 input", req: "OIP-GRPC-RAW-003", codes: invalid,
		build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents[0] = r.RawInputContents[0][:60] })},
	{text: "one raw buffer for two inputs", req: "OIP-GRPC-RAW-008", codes: invalid,
		build: addSubPBWith(true, func(r *pb.ModelInferRequest) { r.RawInputContents = r.RawInputContents[:1] })},
	// The catalog grades FP16 in fp32_contents as soft.
	{text: "FP16 data in fp32_contents", req: "OIP-GRPC-INFER-011", codes: invalid, soft: "A-06",
		build: func() *pb.ModelInferRequest {
			return &pb.ModelInferRequest{ModelName: "identity_fp16", Inputs: []*pb.ModelInferRequest_InferInputTensor{{
				Name: "INPUT0", Datatype: "FP16", Shape: []int64{1, 2},
				Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2}}}}}
		}},
}

var _ = Describe("gRPC inference errors", Over(TransportGRPC), func() {
	for _, c := range grpcCases {
		It("answers "+c.text+" with a non-OK status", Req(c.req, "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
			req := c.build()
			if c.versions {
				needVersions()
			}
			if req.ModelName != "does_not_exist" {
				needFixture(req.ModelName)
			}
			afterNegative()
			_, call := tgt.infer(ctx, req)
			fs := grpcRejection(call, c.req, c.codes...)
			for i := range fs {
				if c.soft != "" && fs[i].req == c.req {
					fs[i].soft = c.soft
				}
			}
			grade(fs...)
		})
	}
})
