package suite

import (
	"context"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// A model that never becomes ready, without the model repository extension:
// the never_ready fixture is deployed at server start but its load fails, so
// it is never ready. A server cannot show it by a 200, so a runtime declares
// it (--fixtures never_ready); where it is not deployed these specs do not
// apply (an optional fixture). Readiness and inference on it are graded by
// the catalog's not-ready rows (§2 health, A-02, A-03, A-12, A-25); its
// metadata is unspecified and only noted.
//
// The specs are declared in their groups' files (TestSpecsLiveInTheirGroupFile),
// each by one call of the functions below (Offset(1)), with the grading here.

// notReadyInput is a well-formed identity_int32 input, never_ready's
// signature: only the model's state may refuse it.
func notReadyInput() tensor.Tensor { return sample("INPUT0", tensor.Int32) }

// neverReadyRESTHealthSpecs declares the REST readiness specs (rest_health.go).
func neverReadyRESTHealthSpecs() {
	It("answers model ready with 4xx for a model that never became ready", Offset(1), Req("OIP-REST-HEALTH-010", "OIP-REST-HEALTH-003"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		AfterNegative()
		e := Get(ctx, "/v2/models/never_ready/ready")
		// A success claims readiness (OIP-REST-HEALTH-010 alone); how a
		// "false" is said, 4xx or KServe's 503, is OIP-REST-HEALTH-003's.
		notReady(e, "OIP-REST-HEALTH-010")
		if Answered(e) && e.Status >= 400 {
			notReady(e, "OIP-REST-HEALTH-003")
		}
		if md := Get(ctx, "/v2/models/never_ready"); md.Err == nil {
			Note("OIP-REST-HEALTH-010", "metadata of never_ready (unspecified) answered %d", md.Status)
		}
	})

	It("says whether the server is ready while a model never became ready", Offset(1), Req("OIP-REST-HEALTH-006", "OIP-REST-HEALTH-003"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		e := Get(ctx, "/v2/health/ready")
		if !Answered(e) {
			return
		}
		// A-12: "all models ready" (REST) gives not ready, "ready for
		// inferencing" (gRPC, Triton without strict readiness) gives ready;
		// the catalog allows both, so a ready server is recorded.
		if e.Status == http.StatusOK {
			Note("OIP-REST-HEALTH-006", "server ready while never_ready is not (A-12: the \"ready for inferencing\" reading)")
			return
		}
		Note("OIP-REST-HEALTH-006", "server not ready while never_ready is not (A-12: the \"all models ready\" reading): %d", e.Status)
		notReady(e, "OIP-REST-HEALTH-003")
	})
}

// neverReadyRESTInferSpec declares the REST inference spec (rest_infer.go).
func neverReadyRESTInferSpec() {
	It("refuses inference on a model that never became ready", Offset(1), Req("OIP-REST-INFER-025", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		AfterNegative()
		e := Post(ctx, "never_ready", "", Request(JSONInput(notReadyInput())))
		if !Answered(e) || !VerifyReq("OIP-REST-INFER-025", e).To(BeRejected()) {
			return
		}
		// A 4xx, or the 503 of the not-ready rows, is a refusal;
		// any other 5xx is the server's fault, judged as every refusal's
		// status is (OIP-REST-ERR-003).
		if e.Status != http.StatusServiceUnavailable {
			VerifyReq(errStatusReq, e).To(AvoidServerError())
		}
		VerifyReq("OIP-REST-ERR-001", e).To(HaveErrorBody())
	})
}

// neverReadyRepoSpec declares the repository index spec (ext_repo.go).
func neverReadyRepoSpec() {
	It("lists a model that never became ready with a state other than READY", Offset(1), Req("OIP-EXT-REPO-002", "OIP-EXT-REPO-005"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		e := repoPost(ctx, "/v2/repository/index", "{}")
		if !listing(VerifyReq("OIP-EXT-REPO-002", e), []string{"never_ready"}, nil) {
			return
		}
		list, _ := ReadBody[[]oip.RepositoryModel](VerifyReq("OIP-EXT-REPO-005", e))
		VerifyReq("OIP-EXT-REPO-005", e).Soft("the catalog does not enumerate states; Triton's ready state is READY").To(PassCheck(func(*Exchange) error {
			for _, m := range indexed(list, "never_ready") {
				if m.State == "READY" {
					return fmt.Errorf("never_ready, never loaded, has state %q; want a state other than READY", m.State)
				}
			}
			return nil
		}))
	})
}

// neverReadyGRPCHealthSpecs declares the gRPC readiness specs (grpc_health.go).
func neverReadyGRPCHealthSpecs() {
	// OK with ready=false and a non-OK status both say "not ready";
	// ready=true breaks the MUST that ModelReady reports the model's
	// readiness. The form is recorded under OIP-GRPC-HEALTH-003, the
	// code under OIP-GRPC-ERR-002 (UNAVAILABLE expected for not ready).
	It("never answers ModelReady with ready=true for a model that never became ready", Offset(1), Req("OIP-GRPC-HEALTH-004", "OIP-GRPC-HEALTH-003", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		AfterNegative()
		r, c := Invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "never_ready"}, Stub().ModelReady)
		if !Answered(c) {
			return
		}
		if c.Err != nil {
			Note("OIP-GRPC-HEALTH-003", "ModelReady for never_ready: not ready reported with status %s", c.Code())
			if !ClientSide(c.Err) {
				VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(codes.Unavailable, codes.NotFound))
			}
			return
		}
		if VerifyReq("OIP-GRPC-HEALTH-004", c).To(PassCheck(func(*pb.ModelReadyResponse) error {
			if r.GetReady() {
				return fmt.Errorf("ModelReady{\"never_ready\"}: OK with ready=true for a model that never became ready, want ready=false or a non-OK status")
			}
			return nil
		})) {
			Note("OIP-GRPC-HEALTH-003", "ModelReady for never_ready: OK with ready=false")
		}
	})

	It("says whether the server is ready while a model never became ready", Offset(1), Req("OIP-GRPC-HEALTH-003"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		r, c := Invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, Stub().ServerReady)
		if !Answered(c) {
			return
		}
		switch {
		case c.Err == nil && r.GetReady():
			// the gRPC wording, "ready for inferencing".
			Note("OIP-GRPC-HEALTH-003", "ServerReady: ready=true while never_ready is not (A-12)")
		case c.Err == nil:
			Note("OIP-GRPC-HEALTH-003", "ServerReady: OK with ready=false while never_ready is not")
		case c.Code() == codes.Unavailable:
			// Triton's answer when the server itself is not ready.
			Note("OIP-GRPC-HEALTH-003", "ServerReady: not ready reported with status %s", c.Code())
		default:
			// Not ready is ready=false under OK; another code says the
			// request itself failed.
			Verify(c).To(BeOK(), "ServerReady while never_ready is not ready")
		}
	})
}

// neverReadyGRPCInferSpec declares the gRPC inference spec (grpc_infer.go).
func neverReadyGRPCInferSpec() {
	It("answers ModelInfer on a model that never became ready with a non-OK status", Offset(1), Req("OIP-GRPC-INFER-015", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("never_ready")
		AfterNegative()
		_, c := Infer(ctx, PBRequest("never_ready", false, notReadyInput()))
		grpcRejects(c, "OIP-GRPC-INFER-015", "", codes.Unavailable)
	})
}

// readyOverREST and readyOverGRPC report whether the server says it is
// ready over the other transport: a not-ready answer with never_ready
// deployed is the "all models ready" reading only when the server
// gives it on every transport — one server has one readiness.
func readyOverREST(ctx context.Context) bool {
	return Targeted(TransportREST) && Get(ctx, "/v2/health/ready").Status == http.StatusOK
}

func readyOverGRPC(ctx context.Context) bool {
	if !Targeted(TransportGRPC) {
		return false
	}
	r, c := Invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, Stub().ServerReady)
	return c.Err == nil && r.GetReady()
}
