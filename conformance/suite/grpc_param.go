package suite

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

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
		check := Verify(c)
		if refusedParams(c) {
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
		Verify(c).To(HaveOutputs(out0))
	})

	It("accepts bool, int64 and string parameters on inputs and requested outputs", Req("OIP-GRPC-PARAM-001", "OIP-GRPC-PARAM-002"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		for _, in := range req.Inputs {
			in.Parameters = kindParams(false)
		}
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: kindParams(false)}, {Name: "OUTPUT1", Parameters: kindParams(false)}}
		_, c := Infer(ctx, req)
		check := VerifyReq("OIP-GRPC-PARAM-001", c)
		if refusedParams(c) {
			check.Soft("A-16")
		}
		if check.To(BeOK()) {
			VerifyReq("OIP-GRPC-PARAM-002", c).To(HaveOutputs(out0, out1))
		}
	})

	// OIP-PROTO adds double_param (4) and uint64_param (5); the catalog
	// makes them informational (Triton: "not supported for custom
	// parameters"), so a refusal is recorded. A server that takes them
	// must still answer right, and a crash is no refusal.
	It("records how double and uint64 parameters are answered at every level", Req("OIP-GRPC-PARAM-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		req, out0, out1 := addSubPB(false)
		req.Parameters = kindParams(true)
		for _, in := range req.Inputs {
			in.Parameters = kindParams(true)
		}
		req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: kindParams(true)}, {Name: "OUTPUT1", Parameters: kindParams(true)}}
		_, c := Infer(ctx, req)
		if !Answered(c) {
			return
		}
		switch {
		case c.Err == nil:
			VerifyReq("OIP-GRPC-PARAM-001", c).To(HaveOutputs(out0, out1))
		case refusedParams(c):
			Note("OIP-GRPC-PARAM-001", "double_param and uint64_param were refused with %s", c.Code())
		default:
			VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(codes.InvalidArgument, codes.Unimplemented))
		}
	})
})

var _ = Describe("gRPC inference", Over(TransportGRPC), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	// Response parameters are allowed (OIP-GRPC-PARAM-002) and a server may
	// carry request parameters back; one it carries back must keep its kind
	// and value. Leaving them out passes, and a refusal is PARAM-001's:
	// double and uint64 go in a request of their own, so that a server
	// refusing them (Triton, A-16) still has the other three graded.
	It("carries request parameters of every kind back unchanged, if at all", Req("OIP-GRPC-PARAM-004"), func(ctx SpecContext) {
		for _, sent := range []map[string]*pb.InferParameter{
			{
				"oipkit_echo_b": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}},
				"oipkit_echo_i": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: math.MaxInt64}},
				"oipkit_echo_s": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "x é"}},
			},
			{
				"oipkit_echo_d": {ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: 0.25}},
				"oipkit_echo_u": {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: math.MaxUint64}},
			},
		} {
			req, _, _ := addSubPB(false)
			req.Parameters = sent
			_, c := Infer(ctx, req)
			if !Answered(c) || c.Err != nil {
				continue
			}
			Verify(c).To(PassCheck(func(r *pb.ModelInferResponse) error {
				var list []error
				for _, k := range slices.Sorted(maps.Keys(sent)) {
					if g, ok := r.GetParameters()[k]; ok && !proto.Equal(g, sent[k]) {
						list = append(list, fmt.Errorf("response parameter %q is %v, but the request sent %v", k, g, sent[k]))
					}
				}
				return errors.Join(list...)
			}))
		}
	})
})

// kindParams is a parameter map with one value of each kind the markdown
// defines (bool, int64, string), or of the two OIP-PROTO adds (double,
// uint64) when wide is set.
func kindParams(wide bool) map[string]*pb.InferParameter {
	if wide {
		return map[string]*pb.InferParameter{
			"oipkit_d": {ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: -2.5e-300}},
			"oipkit_u": {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: math.MaxUint64}},
		}
	}
	return map[string]*pb.InferParameter{
		"oipkit_b": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: false}},
		"oipkit_i": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: -(1 << 62)}},
		"oipkit_s": {ParameterChoice: &pb.InferParameter_StringParam{StringParam: "x é\x00"}},
	}
}

// refusedParams reports a call the server refused (A-16: unknown parameters
// may be refused); a crash (INTERNAL, UNKNOWN), no answer or an unreadable
// answer is not a refusal.
func refusedParams(c *Call) bool {
	return c.Err != nil && GRPCNoAnswer(c.Err) == nil && !ClientSide(c.Err) && c.Code() != codes.Internal && c.Code() != codes.Unknown
}
