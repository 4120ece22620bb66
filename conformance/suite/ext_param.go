package suite

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-PARAM: the parameters extension (Triton's): custom request
// parameters reach the model. The param_echo fixture answers the custom
// parameter "echo" as its one BYTES output, so what the model received is
// visible. Keys Triton reserves (any triton_ prefix) are not custom
// parameters: sending one breaks a rule on clients, so a server that
// accepts it is lenient.

// echoValue is the custom parameter sent; the model must answer it.
const echoValue = "oipkit custom parameter ✓"

func echoInput() tensor.Tensor { return int32s("INPUT0", []int64{1}, 0) }

// echoParams are the request parameters of echoBody and echoPB.
func echoParams() oip.Parameters { return oip.Parameters{fixture.ParamEcho: echoValue} }

// echoOutput is what param_echo must answer to echoParams.
func echoOutput() tensor.Tensor { return oracle(fixture.ParamEchoOutput(echoParams())) }

func echoBody() Body {
	b := Request(JSONInput(echoInput()))
	b.JSON["parameters"] = Obj(echoParams())
	return b
}

func echoPB() *pb.ModelInferRequest {
	req := PBRequest("param_echo", false, echoInput())
	req.Parameters = pbParams(echoParams())
	return req
}

// The probe sends param_echo its parameter over REST, then gRPC: the value
// coming back is the extension at work. Extension fixtures are looked for
// after the probes, so an error answer (param_echo may not be deployed) is
// inconclusive.
var _ = RegisterProbe(specs.ExtParameters, func(ctx context.Context, p *Prober) ProbeResult {
	if p.Targeted(TransportREST) {
		e := p.Post(ctx, "param_echo", "", echoBody())
		if restEcho(e) == nil {
			return Observed(e, "param_echo answered its custom parameter")
		}
	}
	if p.Targeted(TransportGRPC) {
		resp := &pb.ModelInferResponse{}
		c := p.Call(ctx, "ModelInfer", echoPB(), resp)
		if c.Err == nil {
			if got, err := PBOutput(resp, "OUTPUT0"); err == nil && compareEcho(got) {
				return Observed(c, "param_echo answered its custom parameter")
			}
		}
	}
	return Inconclusive(nil, "param_echo did not answer its custom parameter (not deployed?)")
})

// restEcho checks the value param_echo answered, not its shape: the
// extension's subject is the parameter reaching the model, and an output
// shape that differs from the metadata is the core's rule, graded there
// (MLServer's StringCodec answers [1, 1] for a [1] output).
func restEcho(e *Exchange) error {
	if e.Err != nil || e.Status != 200 {
		return fmt.Errorf("%s: %s, want 200", e.What(), e.Got())
	}
	r, err := e.AsInferResponse()
	if err != nil {
		return err
	}
	t, err := r.Tensor("OUTPUT0")
	if err != nil {
		return err
	}
	if !compareEcho(t) {
		return fmt.Errorf("OUTPUT0 is %v, want [%q]", t.Data, echoValue)
	}
	return nil
}

// compareEcho compares the values param_echo answered with the oracle's
// (its shape is the core's rule, see restEcho).
func compareEcho(t tensor.Tensor) bool {
	want, _ := echoOutput().Data.([][]byte)
	got, ok := t.Data.([][]byte)
	return ok && slices.EqualFunc(got, want, bytes.Equal)
}

var _ = Describe("REST parameters", Over(TransportREST), Needs(specs.ExtParameters), func() {
	It("advertises parameters and passes a custom parameter to the model", Req("OIP-EXT-PARAM-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtParameters)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtParameters)
		}))
		NeedFixture("param_echo")
		Verify(Post(ctx, "param_echo", "", echoBody())).To(PassCheck(restEcho))
	})

	It("refuses a custom parameter with the reserved prefix triton_", Req("OIP-EXT-PARAM-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		b, _, _ := addSubRequest()
		b.JSON["parameters"] = Obj{"triton_oipkit_custom": 1}
		Verify(Post(ctx, "add_sub", "", b)).To(BeRejected())
	})
})

var _ = Describe("gRPC parameters", Over(TransportGRPC), Needs(specs.ExtParameters), func() {
	It("advertises parameters and passes a custom parameter to the model", Req("OIP-EXT-PARAM-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtParameters)
		}))
		NeedFixture("param_echo")
		_, c = Infer(ctx, echoPB())
		Verify(c).To(PassCheck(func(r *pb.ModelInferResponse) error {
			got, err := PBOutput(r, "OUTPUT0")
			if err != nil {
				return err
			}
			if !compareEcho(got) {
				return fmt.Errorf("OUTPUT0 is %v, want [%q]", got.Data, echoValue)
			}
			return nil
		}))
	})

	It("refuses a custom parameter with the reserved prefix triton_", Req("OIP-EXT-PARAM-002"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		req, _, _ := addSubPB(false)
		req.Parameters = map[string]*pb.InferParameter{"triton_oipkit_custom": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 1}}}
		_, c := Infer(ctx, req)
		if Answered(c) {
			Verify(c).To(BeRejected())
		}
	})
})
