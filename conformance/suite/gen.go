package suite

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-GEN: the protocol as a whole.

var _ = Describe("REST API surface", Over(TransportREST), func() {
	It("implements the six core REST routes", Req("OIP-GEN-001"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		b, _, _ := addSubRequest()
		body, _ := b.Encode()
		for _, e := range []*Exchange{
			Get(ctx, "/v2/health/live"),
			Get(ctx, "/v2/health/ready"),
			Get(ctx, "/v2/models/add_sub/ready"),
			Get(ctx, "/v2"),
			Get(ctx, "/v2/models/add_sub"),
			PostRaw(ctx, "add_sub", nil, body),
		} {
			Verify(e).To(PassCheck(func(e *Exchange) error {
				if e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed || e.Status == http.StatusNotImplemented {
					return fmt.Errorf("%s: %s; the route is not implemented", e.What(), e.Got())
				}
				return nil
			}))
		}
	})

	// The probes tried every extension the suite knows (see the ext_*.go
	// files). One the server lists but that does not work breaks the
	// promise the list makes; it is graded under OIP-GEN-005 (re-graded
	// fail: the list is the server's own claim), and the extension's own
	// specs, which run because it is listed, say what is broken.
	It("keeps the promise of every extension it lists", Req("OIP-GEN-005"), func(ctx SpecContext) {
		keepsPromises(TransportREST)
	})
})

var _ = Describe("gRPC API surface", Over(TransportGRPC), func() {
	It("keeps the promise of every extension it lists", Req("OIP-GEN-005"), func(ctx SpecContext) {
		keepsPromises(TransportGRPC)
	})
})

// keepsPromises grades the probes that spoke transport tr.
func keepsPromises(tr Transport) {
	for _, ext := range Probed() {
		r, _ := ProbeOf(ext)
		if !Advertises(ext) || r.Evidence == nil || transportOf(r.Evidence) != tr || r.Outcome == report.ProbeInconclusive {
			continue
		}
		Verify(r).On(r.Evidence).To(PassCheck(func(r ProbeResult) error {
			if r.Outcome == report.ProbeAbsent {
				return fmt.Errorf("extension %s is listed in server metadata but does not work: %s", ext, r.Detail)
			}
			return nil
		}))
	}
}

func transportOf(ev Evidencer) Transport {
	switch ev.(type) {
	case *Call, *StreamCall:
		return TransportGRPC
	}
	return TransportREST
}

var _ = Describe("REST server metadata", Over(TransportREST), func() {
	It("has an extensions array, possibly empty", Req("OIP-GEN-004"), func(ctx SpecContext) {
		e := Get(ctx, "/v2")
		Verify(e).To(PassCheck(func(o *Object) error {
			_, err := extensionsField(o.Members)
			return err
		}))
	})
})

// Case sensitivity (KS-REQ): A-37 notes that OIP dropped the rule, so a
// server that accepts the other case is only warned; a 5xx is still a
// server fault (OIP-REST-ERR-003).
var _ = Describe("REST inference errors", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })
	restRejectSpecs(
		restCase{text: "a datatype name in lower case", req: "OIP-GEN-003", soft: "A-37", body: addSubWith(func(b Body) { input0(b)["datatype"] = "int32" })},
		restCase{text: "an input name in a different case", req: "OIP-GEN-003", soft: "A-37", body: addSubWith(func(b Body) { input0(b)["name"] = "input0" })},
		restCase{text: "a model name in a different case", req: "OIP-GEN-003", soft: "A-37", model: "Add_Sub", body: addSubWith(func(Body) {})},
		restCase{text: "a requested output name in a different case", req: "OIP-GEN-003", soft: "A-37", body: addSubWith(func(b Body) { b.JSON["outputs"] = []any{Obj{"name": "output0"}} })},
	)
})

var _ = Describe("gRPC inference errors", Over(TransportGRPC), func() {
	grpcRejectSpecs(
		grpcCase{text: "a datatype name in lower case", req: "OIP-GEN-003", soft: "A-37", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Datatype = "int32" })},
		grpcCase{text: "an input name in a different case", req: "OIP-GEN-003", soft: "A-37", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.Inputs[0].Name = "input0" })},
		grpcCase{text: "a model name in a different case", req: "OIP-GEN-003", soft: "A-37", codes: []codes.Code{codes.NotFound, codes.InvalidArgument}, fixture: "add_sub",
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) { r.ModelName = "Add_Sub" })},
		grpcCase{text: "a requested output name in a different case", req: "OIP-GEN-003", soft: "A-37", codes: invalid,
			build: addSubPBWith(false, func(r *pb.ModelInferRequest) {
				r.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "output0"}}
			})},
	)
})

var _ = Describe("gRPC inference", Over(TransportGRPC), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("uses the OIP field numbers and types, leaving no unknown fields", Req("OIP-GEN-007"), func(ctx SpecContext) {
		req, _, _ := addSubPB(false)
		req.Id = "gen-007"
		_, c := Infer(ctx, req)
		Verify(c).To(HaveNoUnknownFields())
		_, mc := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(mc).To(HaveNoUnknownFields())
		_, mmc := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		Verify(mmc).To(HaveNoUnknownFields())
	})
})
