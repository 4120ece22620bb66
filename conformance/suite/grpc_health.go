package suite

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-GRPC-HEALTH: the gRPC health RPCs.

var _ = Describe("gRPC health", Over(TransportGRPC), func() {
	It("answers ServerLive with OK and live=true", Req("OIP-GRPC-HEALTH-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerLive", &pb.ServerLiveRequest{}, Stub().ServerLive)
		Verify(c).To(PassCheck(func(r *pb.ServerLiveResponse) error {
			if !r.GetLive() {
				return fmt.Errorf("ServerLive: live=false, want true")
			}
			return nil
		}))
	})

	It("answers ServerReady with OK and ready=true when the fixtures are loaded", Req("OIP-GRPC-HEALTH-002"), func(ctx SpecContext) {
		r, c := Invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, Stub().ServerReady)
		// With never_ready deployed, not ready (ready=false, or Triton's
		// UNAVAILABLE, A-25) is the "all models ready" reading,
		// graded in notready.go — unless the same server says ready over
		// REST (readyOverREST).
		if FixtureDeployed("never_ready") && (c.Err == nil && !r.GetReady() || c.Code() == codes.Unavailable && !ClientSide(c.Err)) &&
			!readyOverREST(ctx) {
			Note("OIP-GRPC-HEALTH-002", "not ready (%s) with never_ready deployed", c.Got())
			return
		}
		Verify(c).To(PassCheck(func(r *pb.ServerReadyResponse) error {
			if !r.GetReady() {
				return fmt.Errorf("ServerReady: ready=false, want true")
			}
			return nil
		}))
	})

	It("answers ModelReady with ready=true for loaded models and versions", Req("OIP-GRPC-HEALTH-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		qs := []*pb.ModelReadyRequest{{Name: "add_sub"}}
		if Versions() {
			qs = append(qs, &pb.ModelReadyRequest{Name: "versioned", Version: "2"})
		}
		for _, q := range qs {
			_, c := Invoke(ctx, "ModelReady", q, Stub().ModelReady)
			Verify(c).To(PassCheck(func(r *pb.ModelReadyResponse) error {
				if !r.GetReady() {
					return fmt.Errorf("ModelReady{%q, %q}: ready=false, want true", q.Name, q.Version)
				}
				return nil
			}))
		}
	})

	// On add_sub, not the versioned fixture (versions.go): OK with
	// ready=false and a non-OK status both say "not ready"; ready=true
	// reports a version that does not exist as ready.
	It("never answers ModelReady with ready=true for versions add_sub does not have", Req("OIP-GRPC-HEALTH-004", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		askVersionsGRPC(ctx, "OIP-GRPC-HEALTH-004", func(v string) *Call {
			_, c := Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "add_sub", Version: v}, Stub().ModelReady)
			return c
		}, func(c *Call) bool {
			r, _ := c.Resp.(*pb.ModelReadyResponse)
			return r.GetReady()
		})
	})

	It("never answers ModelReady with ready=true for an unknown model", Req("OIP-GRPC-HEALTH-005", "OIP-GRPC-HEALTH-004", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "does_not_exist"}, Stub().ModelReady)
		if !Answered(c) {
			return
		}
		if c.Err != nil {
			Note("OIP-GRPC-HEALTH-005", "ModelReady for an unknown model answered %s", c.Code())
			// an unknown model is NOT_FOUND or INVALID_ARGUMENT.
			if !ClientSide(c.Err) {
				VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(codes.NotFound, codes.InvalidArgument))
			}
			return
		}
		// A-25 accepts OK with ready=false or a non-OK status, and "never
		// true": a model that does not exist is not ready for inferencing,
		// so true also breaks the MUST that ModelReady reports the
		// model's readiness (OIP-GRPC-HEALTH-004).
		notTrue := func(r *pb.ModelReadyResponse) error {
			if r.GetReady() {
				return fmt.Errorf("ModelReady{\"does_not_exist\"}: OK with ready=true, want ready=false or NOT_FOUND")
			}
			return nil
		}
		VerifyReq("OIP-GRPC-HEALTH-005", c).To(PassCheck(notTrue))
		VerifyReq("OIP-GRPC-HEALTH-004", c).To(PassCheck(notTrue))
	})

	It("records grpc.health.v1 Check when the server exposes it", Req("OIP-GRPC-HEALTH-006"), func(ctx SpecContext) {
		_, c := InvokeMethod(ctx, "/grpc.health.v1.Health/Check", &healthpb.HealthCheckRequest{}, Health().Check)
		if !Answered(c) {
			return
		}
		if c.Err != nil && c.Code() == codes.Unimplemented {
			Note("OIP-GRPC-HEALTH-006", "grpc.health.v1 is not exposed")
			return
		}
		Verify(c).To(PassCheck(func(r *healthpb.HealthCheckResponse) error {
			if r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("Health/Check: %s, want SERVING", r.GetStatus())
			}
			return nil
		}))
	})

	neverReadyGRPCHealthSpecs() // a model that never becomes ready (notready.go)
})

// Server readiness with a model that failed to load needs the model
// repository extension (the broken fixture, and a load that fails).
var _ = Describe("gRPC health with a failed model", RunsLast, Over(TransportGRPC), Needs(specs.ExtModelRepository), func() {
	It("answers ServerReady with OK and ready=false while a model failed to load", Req("OIP-GRPC-HEALTH-003"), func(ctx SpecContext) {
		needBrokenGRPC(ctx)
		takeBackBroken()
		AfterNegative()
		if _, load := Invoke(ctx, "RepositoryModelLoad", &pb.RepositoryModelLoadRequest{ModelName: "broken"}, Stub().RepositoryModelLoad); !Answered(load) {
			return
		}
		r, c := Invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, Stub().ServerReady)
		if !Answered(c) {
			return
		}
		if c.Err != nil {
			Note("OIP-GRPC-HEALTH-003", "not ready is reported with status %s", c.Code())
			return
		}
		Verify(c).To(PassCheck(func(*pb.ServerReadyResponse) error {
			if r.GetReady() {
				return fmt.Errorf("ServerReady: ready=true while broken failed to load (a server without strict readiness may say so)")
			}
			return nil
		}))
	})
})
