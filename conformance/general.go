package conformance

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

var _ = Describe("REST API surface", Over(TransportREST), func() {
	It("implements the six core REST routes", Req("OIP-GEN-001"), func(ctx SpecContext) {
		needFixture("add_sub")
		b, _, _ := addSubRequest()
		body, _ := b.encode()
		exs := []*exchange{
			tgt.get(ctx, "/v2/health/live"),
			tgt.get(ctx, "/v2/health/ready"),
			tgt.get(ctx, "/v2/models/add_sub/ready"),
			tgt.get(ctx, "/v2"),
			tgt.get(ctx, "/v2/models/add_sub"),
			tgt.postRaw(ctx, "add_sub", nil, body),
		}
		var fs []finding
		for _, e := range exs {
			err := e.answered()
			if err == nil && (e.status == http.StatusNotFound || e.status == http.StatusMethodNotAllowed || e.status == http.StatusNotImplemented) {
				err = fmt.Errorf("%s %s: %s; the route is not implemented", e.method, e.path, e.got())
			}
			fs = append(fs, on("OIP-GEN-001", e, err))
		}
		grade(fs...)
	})
})

var _ = Describe("gRPC API surface", Over(TransportGRPC), func() {
	It("implements the six core RPCs of inference.GRPCInferenceService", Req("OIP-GRPC-SVC-001", "OIP-GEN-001"), func(ctx SpecContext) {
		needFixture("add_sub")
		s := tgt.grpc.Stub()
		req, _, _ := addSubPB(false)
		var calls []*call
		_, c := invoke(ctx, "ServerLive", &pb.ServerLiveRequest{}, s.ServerLive)
		calls = append(calls, c)
		_, c = invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, s.ServerReady)
		calls = append(calls, c)
		_, c = invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "add_sub"}, s.ModelReady)
		calls = append(calls, c)
		_, c = invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, s.ServerMetadata)
		calls = append(calls, c)
		_, c = invoke(ctx, "ModelMetadata", &pb.ModelMetadataRequest{Name: "add_sub"}, s.ModelMetadata)
		calls = append(calls, c)
		_, c = tgt.infer(ctx, req)
		calls = append(calls, c)
		var fs []finding
		for _, c := range calls {
			var err error
			if isUnimplemented(c.err) {
				err = fmt.Errorf("%s: %s; the RPC is not implemented", shortMethod(c.method), c.got())
			}
			fs = append(fs, on("OIP-GRPC-SVC-001", c, err), on("OIP-GEN-001", c, err))
		}
		grade(fs...)
	})
})
