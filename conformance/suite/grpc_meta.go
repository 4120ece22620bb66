package suite

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-GRPC-META: gRPC server and model metadata.

var _ = Describe("gRPC metadata", Over(TransportGRPC), func() {
	It("answers ServerMetadata with name, version and extensions", Req("OIP-GRPC-META-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		if !Verify(c).To(BeOK()) {
			return
		}
		// As over REST, the content of name and version is not specified
		// (OIP-REST-SMETA-003) and duplicates are only implied wrong
		// (OIP-REST-SMETA-004): warnings.
		Verify(c).Soft("OIP-REST-SMETA-003").To(PassCheck(func(r *pb.ServerMetadataResponse) error {
			var list []error
			if r.GetName() == "" || r.GetVersion() == "" {
				list = append(list, fmt.Errorf("ServerMetadata: name %q, version %q; want both set", r.GetName(), r.GetVersion()))
			}
			exts := slices.Clone(r.GetExtensions())
			sort.Strings(exts)
			if len(slices.Compact(exts)) != len(r.GetExtensions()) {
				list = append(list, fmt.Errorf("ServerMetadata: duplicate extensions in %q", r.GetExtensions()))
			}
			return errors.Join(list...)
		}))
	})

	It("advertises the same extensions over gRPC as over REST", Req("OIP-GRPC-META-001"), func(ctx SpecContext) {
		if !Targeted(TransportREST) {
			Skip(SkipNotApplicable + "REST is not targeted")
		}
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		if !Answered(c) {
			return
		}
		rest := Get(ctx, "/v2")
		restObj, rerr := rest.AsObject()
		var restExts []string
		if rerr == nil {
			restExts, rerr = extensionsField(restObj.Members)
		}
		// The catalog asks for the same set only as a soft check.
		Verify(c).Soft("A-26").To(PassCheck(func(r *pb.ServerMetadataResponse) error {
			g, rs := slices.Clone(r.GetExtensions()), slices.Clone(restExts)
			sort.Strings(g)
			sort.Strings(rs)
			if rerr == nil && rest.Status == 200 && !slices.Equal(g, rs) {
				return fmt.Errorf("gRPC extensions %q, REST extensions %q", g, rs)
			}
			return nil
		}))
	})

	It("answers ModelMetadata with the fixture's name, platform and tensors", Req("OIP-GRPC-META-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		_, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		Verify(c).To(PassCheck(func(r *pb.ModelMetadataResponse) error {
			var err error
			if r.GetName() != "add_sub" {
				err = fmt.Errorf("name is %q, want \"add_sub\"", r.GetName())
			}
			return errors.Join(err, wantTensors("inputs", pbTensors(r.GetInputs()), addSubMeta...),
				wantTensors("outputs", pbTensors(r.GetOutputs()), addSubOutMeta...))
		}))
	})

	It("reports variable dimensions as -1 over gRPC", Req("OIP-GRPC-META-002"), func(ctx SpecContext) {
		NeedFixture("identity_fp32")
		_, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "identity_fp32"})
		Verify(c).To(PassCheck(func(r *pb.ModelMetadataResponse) error {
			return wantTensors("inputs", pbTensors(r.GetInputs()), tensorMeta{"INPUT0", "FP32", []int64{-1, -1}})
		}))
	})

	It("decodes properties, if any", Req("OIP-GRPC-META-003"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		// The metadata specs read fields 1-5 tolerantly; properties that are
		// not map<string, string> are reported here and, as a wire-layout
		// break, under OIP-GEN-007.
		resp, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub"})
		if !Verify(c).To(BeOK()) {
			return
		}
		if Verify(c.Wire).On(c).To(Succeed()) && len(resp.GetProperties()) > 0 {
			Note("OIP-GRPC-META-003", "add_sub has %d properties", len(resp.GetProperties()))
		}
	})

	It("answers ModelMetadata for an unknown model with a non-OK status", Req("OIP-GRPC-META-004", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "ModelMetadata", &pb.ModelMetadataRequest{Name: "does_not_exist"}, Stub().ModelMetadata)
		grpcRejects(c, "OIP-GRPC-META-004", "", codes.NotFound, codes.InvalidArgument)
	})

	// On add_sub, not the versioned fixture (versions.go).
	It("answers ModelMetadata on versions add_sub does not have with a non-OK status", Req("OIP-GRPC-META-006", "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		askVersionsGRPC(ctx, "OIP-GRPC-META-006", func(v string) *Call {
			_, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "add_sub", Version: v})
			return c
		}, nil)
	})

	It("records the version chosen for ModelMetadata without a version", Req("OIP-GRPC-META-005"), func(ctx SpecContext) {
		NeedFixture("versioned")
		resp, c := ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: "versioned"})
		if !Answered(c) {
			return
		}
		if c.Err == nil {
			Note("OIP-GRPC-META-005", "versions %q", resp.GetVersions())
		} else {
			Note("OIP-GRPC-META-005", "answered %s", c.Code())
		}
	})
})
