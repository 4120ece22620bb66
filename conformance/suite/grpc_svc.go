package suite

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-GRPC-SVC: the service inference.GRPCInferenceService.

var _ = Describe("gRPC API surface", Over(TransportGRPC), func() {
	It("implements the six core RPCs of inference.GRPCInferenceService", Req("OIP-GRPC-SVC-001", "OIP-GEN-001"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		s := Stub()
		req, _, _ := addSubPB(false)
		var calls []*Call
		_, c := Invoke(ctx, "ServerLive", &pb.ServerLiveRequest{}, s.ServerLive)
		calls = append(calls, c)
		_, c = Invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, s.ServerReady)
		calls = append(calls, c)
		_, c = Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "add_sub"}, s.ModelReady)
		calls = append(calls, c)
		_, c = Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, s.ServerMetadata)
		calls = append(calls, c)
		_, c = Invoke(ctx, "ModelMetadata", &pb.ModelMetadataRequest{Name: "add_sub"}, s.ModelMetadata)
		calls = append(calls, c)
		_, c = Infer(ctx, req)
		calls = append(calls, c)
		implemented := PassCheck(func(c *Call) error {
			if c.Code() == codes.Unimplemented {
				return fmt.Errorf("%s: %s; the RPC is not implemented", c.Name(), c.Got())
			}
			return nil
		})
		for _, c := range calls {
			VerifyReq("OIP-GRPC-SVC-001", c).To(implemented)
			VerifyReq("OIP-GEN-001", c).To(implemented)
		}
	})
})
