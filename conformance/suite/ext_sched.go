package suite

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-SCHED: the schedule_policy extension (Triton's): the request
// parameters priority (int64; 0 the default, 1 the highest) and timeout
// (int64 microseconds). Both are optional. The order in which a server
// schedules is not observable from one request, so the specs check that a
// request carrying them is served (the outputs are the core specs' concern),
// and that one without them is too. A
// request that cannot finish within its timeout may fail: that is a
// model-specific action the catalog does not fix, so it is not checked.
// There is no probe: a server that ignores the parameters answers the same.

// schedREST is add_sub's request with the given parameters.
func schedREST(params Obj) Body {
	b, _, _ := addSubRequest()
	if params != nil {
		b.JSON["parameters"] = params
	}
	return b
}

func schedPB(params map[string]int64) *pb.ModelInferRequest {
	req, _, _ := addSubPB(false)
	if len(params) > 0 {
		req.Parameters = map[string]*pb.InferParameter{}
		for k, v := range params {
			req.Parameters[k] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: v}}
		}
	}
	return req
}

var _ = Describe("REST schedule policy", Over(TransportREST), Needs(specs.ExtSchedulePolicy), func() {
	It("advertises schedule_policy in server metadata", Req("OIP-EXT-SCHED-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtSchedulePolicy)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtSchedulePolicy)
		}))
	})

	It("serves a request with priority 1, the highest", Req("OIP-EXT-SCHED-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Post(ctx, "add_sub", "", schedREST(Obj{"priority": 1}))).To(HaveStatus(http.StatusOK))
	})

	It("serves a request whose timeout leaves ample time", Req("OIP-EXT-SCHED-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Post(ctx, "add_sub", "", schedREST(Obj{"timeout": 10000000}))).To(HaveStatus(http.StatusOK))
	})

	It("serves a request without priority and timeout", Req("OIP-EXT-SCHED-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Post(ctx, "add_sub", "", schedREST(nil))).To(HaveStatus(http.StatusOK))
	})
})

var _ = Describe("gRPC schedule policy", Over(TransportGRPC), Needs(specs.ExtSchedulePolicy), func() {
	It("advertises schedule_policy in server metadata", Req("OIP-EXT-SCHED-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtSchedulePolicy)
		}))
	})

	It("serves a request with an int64 priority 1, the highest", Req("OIP-EXT-SCHED-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		_, c := Infer(ctx, schedPB(map[string]int64{"priority": 1}))
		Verify(c).To(BeOK())
	})

	It("serves a request whose int64 timeout leaves ample time", Req("OIP-EXT-SCHED-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		_, c := Infer(ctx, schedPB(map[string]int64{"timeout": 10000000}))
		Verify(c).To(BeOK())
	})

	It("serves a request without priority and timeout", Req("OIP-EXT-SCHED-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		_, c := Infer(ctx, schedPB(nil))
		Verify(c).To(BeOK())
	})
})
