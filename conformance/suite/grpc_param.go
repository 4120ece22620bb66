package suite

import (
	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-GRPC-PARAM: InferParameter and parameters maps.

var _ = Describe("gRPC inference", Over(TransportGRPC), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("accepts bool, int64 and string parameters", Req("OIP-GRPC-PARAM-001"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		req.Parameters = map[string]*pb.InferParameter{
			"oipkit_b": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}},
			"oipkit_i": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 1}},
			"oipkit_s": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "x"}},
		}
		_, c := Infer(ctx, req)
		// refusing unknown parameters is a warning, whatever the
		// code; a crash (INTERNAL, UNKNOWN) or no answer is not a refusal.
		refused := c.Err != nil && GRPCNoAnswer(c.Err) == nil && !ClientSide(c.Err) && c.Code() != codes.Internal && c.Code() != codes.Unknown
		check := Verify("OIP-GRPC-PARAM-001", c)
		if refused {
			check.Soft("A-16")
		}
		check.To(BeOK())
	})

	It("accepts empty parameter maps at every level", Req("OIP-GRPC-PARAM-002"), func(ctx SpecContext) {
		req, out0, _ := addSubPB(false)
		req.Parameters = map[string]*pb.InferParameter{}
		for _, in := range req.Inputs {
			in.Parameters = map[string]*pb.InferParameter{}
		}
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: map[string]*pb.InferParameter{}}}
		_, c := Infer(ctx, req)
		Verify("OIP-GRPC-PARAM-002", c).To(HaveOutputs(out0))
	})
})
