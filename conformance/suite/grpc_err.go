package suite

import (
	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
)

// OIP-GRPC-ERR: gRPC error statuses.

var _ = Describe("gRPC errors, an oversized message", RunsAfterLast, Oversized, Over(TransportGRPC), func() {
	// Over the common receive limits (grpc-go and grpc-python default to
	// 4 MiB, the reference to 64 MiB); a server that reads it must still
	// refuse 65 MiB of INPUT0 for shape [1,16].
	It("refuses a 65 MiB ModelInfer with RESOURCE_EXHAUSTED or INVALID_ARGUMENT and stays live", Req("OIP-GRPC-ERR-003", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		req, _, _ := addSubPB(true)
		req.RawInputContents[0] = make([]byte, 65<<20)
		_, c := Infer(ctx, req)
		if !Answered(c) {
			return
		}
		// RESOURCE_EXHAUSTED "received message larger than max" reads as
		// ClientSide (grpc-go's client words it the same way), but the
		// suite's own limit is on answers, and no add_sub answer comes near
		// it: here it is the server's refusal.
		switch code := c.Code(); {
		case c.Err == nil:
			VerifyReq("OIP-GRPC-ERR-003", c).To(BeRejected())
		case code == codes.Internal || code == codes.Unknown:
			// Refused all the same; the code is judged as the core judges
			// every refused request's, under OIP-GRPC-ERR-002.
			VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(codes.ResourceExhausted, codes.InvalidArgument))
		default:
			VerifyReq("OIP-GRPC-ERR-003", c).To(HaveCode(codes.ResourceExhausted, codes.InvalidArgument))
		}
	})
})
