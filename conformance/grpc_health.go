package conformance

import (
	"fmt"
	"slices"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

var _ = Describe("gRPC health", Over(TransportGRPC), func() {
	It("answers ServerLive with OK and live=true", Req("OIP-GRPC-HEALTH-001"), func(ctx SpecContext) {
		resp, c := invoke(ctx, "ServerLive", &pb.ServerLiveRequest{}, tgt.grpc.Stub().ServerLive)
		err := c.wantOK()
		if err == nil && !resp.GetLive() {
			err = fmt.Errorf("ServerLive: live=false, want true")
		}
		grade(on("OIP-GRPC-HEALTH-001", c, err))
	})

	It("answers ServerReady with OK and ready=true when the fixtures are loaded", Req("OIP-GRPC-HEALTH-002"), func(ctx SpecContext) {
		resp, c := invoke(ctx, "ServerReady", &pb.ServerReadyRequest{}, tgt.grpc.Stub().ServerReady)
		err := c.wantOK()
		if err == nil && !resp.GetReady() {
			err = fmt.Errorf("ServerReady: ready=false, want true")
		}
		grade(on("OIP-GRPC-HEALTH-002", c, err))
	})

	It("answers ModelReady with ready=true for loaded models and versions", Req("OIP-GRPC-HEALTH-004"), func(ctx SpecContext) {
		needFixture("add_sub")
		qs := []*pb.ModelReadyRequest{{Name: "add_sub"}}
		if tgt.versions {
			qs = append(qs, &pb.ModelReadyRequest{Name: "versioned", Version: "2"})
		}
		var fs []finding
		for _, q := range qs {
			resp, c := invoke(ctx, "ModelReady", q, tgt.grpc.Stub().ModelReady)
			err := c.wantOK()
			if err == nil && !resp.GetReady() {
				err = fmt.Errorf("ModelReady{%q, %q}: ready=false, want true", q.Name, q.Version)
			}
			fs = append(fs, on("OIP-GRPC-HEALTH-004", c, err))
		}
		grade(fs...)
	})

	It("never answers ModelReady with ready=true for an unknown model", Req("OIP-GRPC-HEALTH-005", "OIP-GRPC-HEALTH-004"), func(ctx SpecContext) {
		afterNegative()
		resp, c := invoke(ctx, "ModelReady", &pb.ModelReadyRequest{Name: "does_not_exist"}, tgt.grpc.Stub().ModelReady)
		var err error
		switch {
		case grpcNoAnswer(c.err) != nil:
			err = c.wantOK()
		case c.err == nil && resp.GetReady():
			err = fmt.Errorf("ModelReady{\"does_not_exist\"}: OK with ready=true, want ready=false or NOT_FOUND")
		case c.err != nil:
			note("OIP-GRPC-HEALTH-005", "ModelReady for an unknown model answered %s", c.code())
		}
		// A-25 accepts OK with ready=false or a non-OK status, and "never
		// true": a model that does not exist is not ready for inferencing,
		// so true also breaks the MUST that ModelReady reports the
		// model's readiness (OIP-GRPC-HEALTH-004).
		grade(on("OIP-GRPC-HEALTH-005", c, err), on("OIP-GRPC-HEALTH-004", c, err))
	})

	It("records grpc.health.v1 Check when the server exposes it", Req("OIP-GRPC-HEALTH-006"), func(ctx SpecContext) {
		hc := healthpb.NewHealthClient(tgt.grpc.Conn())
		cctx, cancel := tgt.grpc.Context(ctx)
		defer cancel()
		req := &healthpb.HealthCheckRequest{}
		resp, err := hc.Check(cctx, req)
		c := &call{method: "/grpc.health.v1.Health/Check", req: req, err: err}
		var ferr error
		switch {
		case isUnimplemented(err):
			note("OIP-GRPC-HEALTH-006", "grpc.health.v1 is not exposed")
		case err != nil:
			ferr = c.wantOK()
		default:
			c.resp = resp
			if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				ferr = fmt.Errorf("Health/Check: %s, want SERVING", resp.GetStatus())
			}
		}
		grade(on("OIP-GRPC-HEALTH-006", c, ferr))
	})
})

var _ = Describe("gRPC metadata", Over(TransportGRPC), func() {
	It("answers ServerMetadata with name, version and extensions", Req("OIP-GRPC-META-001"), func(ctx SpecContext) {
		resp, c := invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, tgt.grpc.Stub().ServerMetadata)
		err := c.wantOK()
		var soft error
		if err == nil {
			// As over REST, the content of name and version is not
			// specified (OIP-REST-SMETA-003) and duplicates are only
			// implied wrong (OIP-REST-SMETA-004): warnings.
			if resp.GetName() == "" || resp.GetVersion() == "" {
				soft = fmt.Errorf("ServerMetadata: name %q, version %q; want both set", resp.GetName(), resp.GetVersion())
			}
			exts := slices.Clone(resp.GetExtensions())
			sort.Strings(exts)
			if len(slices.Compact(exts)) != len(resp.GetExtensions()) {
				soft = errs(soft, fmt.Errorf("ServerMetadata: duplicate extensions in %q", resp.GetExtensions()))
			}
		}
		grade(on("OIP-GRPC-META-001", c, err), softOn("OIP-GRPC-META-001", "OIP-REST-SMETA-003", c, soft))
	})

	It("advertises the same extensions over gRPC as over REST", Req("OIP-GRPC-META-001"), func(ctx SpecContext) {
		if tgt.rest == nil {
			Skip(skipNotApplicable + "REST is not targeted")
		}
		resp, c := invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, tgt.grpc.Stub().ServerMetadata)
		err := c.wantOK()
		if err == nil {
			_, _, restExts, rerr := tgt.restServerMetadata(ctx)
			g, r := slices.Clone(resp.GetExtensions()), slices.Clone(restExts)
			sort.Strings(g)
			sort.Strings(r)
			if rerr == nil && !slices.Equal(g, r) {
				err = fmt.Errorf("gRPC extensions %q, REST extensions %q", g, r)
			}
		}
		// The catalog asks for the same set only as a soft check.
		grade(softOn("OIP-GRPC-META-001", "A-26", c, err))
	})

	It("answers ModelMetadata with the fixture's name, platform and tensors", Req("OIP-GRPC-META-002"), func(ctx SpecContext) {
		needFixture("add_sub")
		resp, c, _ := modelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		err := c.wantOK()
		if err == nil {
			if resp.GetName() != "add_sub" {
				err = fmt.Errorf("name is %q, want \"add_sub\"", resp.GetName())
			}
			err = errs(err, wantTensors("inputs", pbTensors(resp.GetInputs()), addSubMeta...),
				wantTensors("outputs", pbTensors(resp.GetOutputs()), addSubOutMeta...))
		}
		grade(on("OIP-GRPC-META-002", c, err))
	})

	It("reports variable dimensions as -1 over gRPC", Req("OIP-GRPC-META-002"), func(ctx SpecContext) {
		needFixture("identity_fp32")
		resp, c, _ := modelMetadata(ctx, &pb.ModelMetadataRequest{Name: "identity_fp32"})
		err := c.wantOK()
		if err == nil {
			err = wantTensors("inputs", pbTensors(resp.GetInputs()), tensorMeta{"INPUT0", "FP32", []int64{-1, -1}})
		}
		grade(on("OIP-GRPC-META-002", c, err))
	})

	It("decodes properties, if any", Req("OIP-GRPC-META-003"), func(ctx SpecContext) {
		needFixture("add_sub")
		// The metadata specs read fields 1-5 tolerantly; properties that are
		// not map<string, string> are reported here and, as a wire-layout
		// break, under OIP-GEN-007.
		resp, c, wire := modelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		err := c.wantOK()
		if err == nil {
			err = wire
			if wire == nil && len(resp.GetProperties()) > 0 {
				note("OIP-GRPC-META-003", "add_sub has %d properties", len(resp.GetProperties()))
			}
		}
		grade(on("OIP-GRPC-META-003", c, err))
	})

	It("answers ModelMetadata for an unknown model with a non-OK status", Req("OIP-GRPC-META-004", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		afterNegative()
		_, c := invoke(ctx, "ModelMetadata", &pb.ModelMetadataRequest{Name: "does_not_exist"}, tgt.grpc.Stub().ModelMetadata)
		grade(grpcRejection(c, "OIP-GRPC-META-004", codes.NotFound, codes.InvalidArgument)...)
	})

	It("records the version chosen for ModelMetadata without a version", Req("OIP-GRPC-META-005"), func(ctx SpecContext) {
		needFixture("versioned")
		resp, c, _ := modelMetadata(ctx, &pb.ModelMetadataRequest{Name: "versioned"})
		if c.err == nil {
			note("OIP-GRPC-META-005", "versions %q", resp.GetVersions())
		} else {
			note("OIP-GRPC-META-005", "answered %s", c.code())
		}
		grade(on("", c, grpcNoAnswer(c.err)))
	})
})

func pbTensors(ts []*pb.ModelMetadataResponse_TensorMetadata) []tensorMeta {
	out := make([]tensorMeta, len(ts))
	for i, t := range ts {
		out[i] = tensorMeta{t.GetName(), t.GetDatatype(), t.GetShape()}
	}
	return out
}
