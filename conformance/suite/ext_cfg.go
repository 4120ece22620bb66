package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
		case configObserved(e):
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

// restConfig is what the specs read of a REST configuration, the JSON
// form of Triton's ModelConfig; its shape is the schema's model_config
// (OIP-EXT-CFG-002), which also holds member names to their case.
type restConfig struct {
	Name   string         `json:"name"`
	Input  []tensorConfig `json:"input"`
	Output []tensorConfig `json:"output"`
}

type tensorConfig struct {
	Name string `json:"name"`
}

// configErr checks a configuration of add_sub: named add_sub, whose input
// and output lists name the fixture's tensors. Dims are not compared: a
// batching configuration leaves the batch dimension out of them.
func configErr(c restConfig) error {
	var list []error
	if c.Name != "add_sub" {
		list = append(list, fmt.Errorf("name is %q, want \"add_sub\"", c.Name))
	}
	for _, l := range []struct {
		key  string
		ts   []tensorConfig
		want []string
	}{{"input", c.Input, []string{"INPUT0", "INPUT1"}}, {"output", c.Output, []string{"OUTPUT0", "OUTPUT1"}}} {
		for _, w := range l.want {
			if !slices.Contains(l.ts, tensorConfig{Name: w}) {
				list = append(list, fmt.Errorf("%q does not configure %s", l.key, w))
			}
		}
	}
	return errors.Join(list...)
}

// configObserved reports whether a probe's answer is add_sub's
// configuration, or a JSON object the schema refuses (the extension is
// there; its specs grade the body).
func configObserved(e *Exchange) bool {
	var c restConfig
	switch err := DecodeBody(e, &c); {
	case err == nil:
		return configErr(c) == nil
	case errors.Is(err, ErrBodyBreaksSchema):
		return bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("{"))
	}
	return false
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
		e := Get(ctx, "/v2/models/add_sub/config")
		if c, ok := ReadBody[restConfig](Verify(e)); ok {
			Verify(e).To(PassCheck(func(*Exchange) error { return configErr(c) }))
		}
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
