package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// OIP-EXT-CFG: the model configuration extension (Triton's ModelConfig, as
// JSON over REST and as inference.ModelConfig over gRPC).

// The probe asks for add_sub's configuration over REST, then over gRPC:
// either answering it is the extension at work.
var _ = RegisterProbe(specs.ExtModelConfiguration, func(ctx context.Context, p *Prober) ProbeResult {
	if !p.Deployed("add_sub") {
		return Inconclusive(nil, "fixture add_sub is not deployed")
	}
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Get(ctx, "/v2/models/add_sub/config")
		switch {
		case e.Err != nil:
			return Unanswered()
		case configJSONErr(e) == nil:
			return Observed(e, "GET /v2/models/add_sub/config answered add_sub's configuration")
		}
		return Absent(e, "GET /v2/models/add_sub/config: %s", clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.ModelConfigResponse{}
		c := p.Call(ctx, "ModelConfig", &pb.ModelConfigRequest{Name: "add_sub"}, resp)
		switch {
		case GRPCNoAnswer(c.Err) != nil:
			return Unanswered()
		case c.Err == nil && resp.GetConfig().GetName() == "add_sub":
			return Observed(c, "ModelConfig answered add_sub's configuration")
		}
		return Absent(c, "ModelConfig{add_sub}: %s", clipped(c.Got(), 160))
	}, "no answer to the configuration of add_sub")
})

// configJSONErr checks a REST configuration of add_sub: a 200 JSON object
// in the form of Triton's ModelConfig, named add_sub, whose input and
// output lists name the fixture's tensors. Dims are not compared: a
// batching configuration leaves the batch dimension out of them.
func configJSONErr(e *Exchange) error {
	if e.Status != http.StatusOK {
		return fmt.Errorf("%s: %s, want 200", e.What(), e.Got())
	}
	m, err := DecodeObject(e.Body)
	if err != nil {
		return fmt.Errorf("%s: %v", e.What(), err)
	}
	var list []error
	if name, err := StringField(m, "name"); err != nil || name != "add_sub" {
		list = append(list, fmt.Errorf("name is %s, want \"add_sub\"", clipped(string(m["name"]), 80)))
	}
	for key, want := range map[string][]string{"input": {"INPUT0", "INPUT1"}, "output": {"OUTPUT0", "OUTPUT1"}} {
		// Member names as sent: encoding/json into a struct would match
		// "NAME" as name.
		var ts []map[string]json.RawMessage
		if err := json.Unmarshal(m[key], &ts); err != nil || ts == nil {
			list = append(list, fmt.Errorf("%q is %s, want an array of tensor configurations", key, clipped(string(m[key]), 120)))
			continue
		}
		for _, w := range want {
			if !slices.ContainsFunc(ts, func(t map[string]json.RawMessage) bool {
				name, err := StringField(t, "name")
				return err == nil && name == w
			}) {
				list = append(list, fmt.Errorf("%q does not configure %s", key, w))
			}
		}
	}
	return errors.Join(list...)
}

var _ = Describe("REST model configuration", Over(TransportREST), Needs(specs.ExtModelConfiguration), func() {
	It("advertises model_configuration in server metadata", Req("OIP-EXT-CFG-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtModelConfiguration)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtModelConfiguration)
		}))
	})

	It("answers GET /v2/models/{m}/config with the model's configuration", Req("OIP-EXT-CFG-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		Verify(Get(ctx, "/v2/models/add_sub/config")).To(PassCheck(configJSONErr))
	})

	It("answers the configuration of an unknown model with an error status and {\"error\": string}", Req("OIP-EXT-CFG-003"), func(ctx SpecContext) {
		AfterNegative()
		Verify(Get(ctx, "/v2/models/does_not_exist/config")).To(BeErrorResponse())
	})
})

var _ = Describe("gRPC model configuration", Over(TransportGRPC), Needs(specs.ExtModelConfiguration), func() {
	It("advertises model_configuration in server metadata", Req("OIP-EXT-CFG-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtModelConfiguration)
		}))
	})

	It("answers ModelConfig with the model's configuration", Req("OIP-EXT-CFG-004"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		_, c := Invoke(ctx, "ModelConfig", &pb.ModelConfigRequest{Name: "add_sub"}, Stub().ModelConfig)
		Verify(c).To(PassCheck(func(r *pb.ModelConfigResponse) error {
			cfg := r.GetConfig()
			var list []error
			if cfg.GetName() != "add_sub" {
				list = append(list, fmt.Errorf("config.name is %q, want \"add_sub\"", cfg.GetName()))
			}
			var ins, outs []string
			for _, t := range cfg.GetInput() {
				ins = append(ins, t.GetName())
			}
			for _, t := range cfg.GetOutput() {
				outs = append(outs, t.GetName())
			}
			for _, w := range []string{"INPUT0", "INPUT1"} {
				if !slices.Contains(ins, w) {
					list = append(list, fmt.Errorf("config.input %q does not configure %s", ins, w))
				}
			}
			for _, w := range []string{"OUTPUT0", "OUTPUT1"} {
				if !slices.Contains(outs, w) {
					list = append(list, fmt.Errorf("config.output %q does not configure %s", outs, w))
				}
			}
			return errors.Join(list...)
		}))
	})

	It("answers ModelConfig for an unknown model with a non-OK status", Req("OIP-EXT-CFG-004"), func(ctx SpecContext) {
		AfterNegative()
		_, c := Invoke(ctx, "ModelConfig", &pb.ModelConfigRequest{Name: "does_not_exist"}, Stub().ModelConfig)
		if Answered(c) {
			Verify(c).To(BeRejected())
		}
	})
})

// skipUnknownSupport skips a spec of the rule that a supporting server
// lists ext when ext is tested only because its probe was inconclusive:
// whether the server supports it, and so must list it, is not known. A
// listed extension is checked as usual.
func skipUnknownSupport(ext specs.Extension) {
	if FeatureSource() == "flag" {
		return
	}
	if r, ok := ProbeOf(ext); ok && r.Outcome == report.ProbeInconclusive && !Advertises(ext) {
		Skip(fmt.Sprintf("%s: its probe was inconclusive (%s), so whether the server supports it, and must list it, is unknown", ext, r.Detail))
	}
}

// advertisedErr says why ext is missing from an advertised list, naming
// what made the run test it anyway.
func advertisedErr(exts []string, ext specs.Extension) error {
	for _, name := range exts {
		if e, _, ok := specs.ParseAdvertised(name); ok && e == ext {
			return nil
		}
	}
	skipUnknownSupport(ext)
	why := "--features names it"
	if FeatureSource() != "flag" {
		why = "the probe observed it"
		if r, ok := ProbeOf(ext); ok {
			why += " (" + r.Detail + ")"
		}
	}
	return fmt.Errorf("extensions %q do not include %q, yet the extension is tested because %s", exts, ext, why)
}
