package suite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/protobuf/proto"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-CLS: the classification extension (Triton's). A requested output
// with the parameter "classification": k comes back as its k highest-valued
// classes, each a string "<value>:<index>" with ":<label>" when the model
// has labels, in descending order.
//
// The classifier fixture returns its input row as class scores, labelled a,
// b, c and d. One row [1.1, 3.3, 0.5, 2.4] with k = 2 must give the classes
// 1 (b, 3.3) and 3 (d, 2.4), in that order: the fixture oracle computes
// them (clsWant).

// clsRow is the classifier input and clsCount the classes asked for.
var (
	clsRow   = []float32{1.1, 3.3, 0.5, 2.4}
	clsCount = 2
)

// clsWant are the classes the classifier must answer for clsRow and
// clsCount, in order.
func clsWant() []clsClass {
	out := oracle(fixture.Classify(identityOutput(clsInput()), int64(clsCount), fixture.ClassifierLabels))
	r, err := classText(out)
	if err != nil {
		panic(fmt.Sprintf("conformance: fixture oracle: %v", err))
	}
	want, err := r.parse()
	if err != nil {
		panic(fmt.Sprintf("conformance: fixture oracle: %v", err))
	}
	return want
}

// clsClass is one parsed result string.
type clsClass struct {
	value float64
	index int
	label string
}

func clsInput() tensor.Tensor {
	return tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, 4}, Data: slices.Clone(clsRow)}
}

// clsBody is the REST request: OUTPUT0 with classification k.
func clsBody(k any) Body {
	b := Request(JSONInput(clsInput()))
	b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"classification": k}}}
	return b
}

// clsPB is the gRPC request: OUTPUT0 with classification (int64_param) k.
func clsPB(k int64) *pb.ModelInferRequest {
	req := PBRequest("classifier", false, clsInput())
	req.Outputs = []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0",
		Parameters: map[string]*pb.InferParameter{"classification": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: k}}}}}
	return req
}

// The probe asks the classifier for its top classes over REST, then gRPC:
// BYTES (or STRING) results are the extension at work; its scores instead
// mean the parameter was ignored. Extension fixtures are looked for after
// the probes, so an error answer (the classifier may not be deployed) is
// inconclusive.
var _ = RegisterProbe(specs.ExtClassification, func(ctx context.Context, p *Prober) ProbeResult {
	return p.RESTThenGRPC(ctx, func(ctx context.Context) ProbeResult {
		e := p.Post(ctx, "classifier", "", clsBody(clsCount))
		switch _, err := clsREST(e); {
		case e.Err != nil || e.Status != http.StatusOK:
			return Unanswered()
		case err == nil:
			return Observed(e, "classifier answered OUTPUT0 as classes")
		}
		return Absent(e, "classifier with classification %d: %s", clsCount, clipped(e.Got(), 160))
	}, func(ctx context.Context) ProbeResult {
		resp := &pb.ModelInferResponse{}
		c := p.Call(ctx, "ModelInfer", clsPB(int64(clsCount)), resp)
		switch {
		case c.Err != nil:
			return Unanswered()
		case clsErrOf(clsGRPC(resp)) == nil:
			return Observed(c, "ModelInfer of classifier answered OUTPUT0 as classes")
		}
		return Absent(c, "ModelInfer of classifier with classification %d: %s", clsCount, clipped(c.Got(), 160))
	}, "no inference answer from the classifier (not deployed?)")
})

func clsErrOf(_ clsResult, err error) error { return err }

// clsResult is a classification output: its shape and strings.
type clsResult struct {
	shape   []int64
	strings []string
}

// classText reads a BYTES tensor as strings; STRING, the datatype the
// extension's examples show, is read as BYTES.
func classText(t tensor.Tensor) (clsResult, error) {
	b, ok := t.Data.([][]byte)
	if !ok {
		return clsResult{}, fmt.Errorf("output %q is %s, want BYTES (or STRING) result strings", t.Name, t.Datatype)
	}
	r := clsResult{shape: t.Shape}
	for _, s := range b {
		r.strings = append(r.strings, string(s))
	}
	return r, nil
}

// clsREST reads OUTPUT0 of a REST answer as classification strings.
func clsREST(e *Exchange) (clsResult, error) {
	r, err := e.AsInferResponse()
	if err != nil {
		return clsResult{}, err
	}
	if o := r.Output("OUTPUT0"); o != nil && o.Datatype == "STRING" {
		c := *o
		c.Datatype = string(tensor.Bytes)
		rc := *r
		rc.Outputs = []*Output{&c}
		r = &rc
	}
	t, err := r.Tensor("OUTPUT0")
	if err != nil {
		return clsResult{}, err
	}
	return classText(t)
}

// clsGRPC reads OUTPUT0 of a gRPC answer, from bytes_contents or raw.
func clsGRPC(resp *pb.ModelInferResponse) (clsResult, error) {
	if slices.ContainsFunc(resp.GetOutputs(), func(o *pb.ModelInferResponse_InferOutputTensor) bool { return o.GetDatatype() == "STRING" }) {
		resp = proto.Clone(resp).(*pb.ModelInferResponse)
		for _, o := range resp.GetOutputs() {
			if o.GetDatatype() == "STRING" {
				o.Datatype = string(tensor.Bytes)
			}
		}
	}
	t, err := PBOutput(resp, "OUTPUT0")
	if err != nil {
		return clsResult{}, err
	}
	return classText(t)
}

// countErr checks OIP-EXT-CLS-002/003: k results, in a last dimension of k
// ([1, k] for the one-row request, or [k]).
func (r clsResult) countErr(k int) error {
	if len(r.strings) != k {
		return fmt.Errorf("OUTPUT0 holds %d classes %q, want the %d asked for", len(r.strings), r.strings, k)
	}
	if len(r.shape) == 0 || r.shape[len(r.shape)-1] != int64(k) {
		return fmt.Errorf("OUTPUT0 has shape %v, want a last dimension of %d (the count asked for)", r.shape, k)
	}
	return nil
}

var clsPattern = regexp.MustCompile(`^([^:]+):(\d+)(?::(.*))?$`)

// parse reads every result string; an error names the first malformed one.
func (r clsResult) parse() ([]clsClass, error) {
	var out []clsClass
	for i, s := range r.strings {
		m := clsPattern.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("class %d is %q, want \"<value>:<index>\" or \"<value>:<index>:<label>\"", i, s)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return nil, fmt.Errorf("class %d is %q: the value %q is not a number", i, s, m[1])
		}
		idx, err := strconv.Atoi(m[2])
		if err != nil {
			return nil, fmt.Errorf("class %d is %q: the index %q is not an integer", i, s, m[2])
		}
		out = append(out, clsClass{v, idx, m[3]})
	}
	return out, nil
}

// orderErr checks OIP-EXT-CLS-004: the highest classes, highest first.
func (r clsResult) orderErr() error {
	got, err := r.parse()
	if err != nil {
		return err
	}
	var idx, want []int
	for _, c := range got {
		idx = append(idx, c.index)
	}
	for _, c := range clsWant() {
		want = append(want, c.index)
	}
	if !slices.Equal(idx, want) {
		return fmt.Errorf("classes %q have indexes %v; scores %v with count %d give %v, highest first", r.strings, idx, clsRow, clsCount, want)
	}
	return nil
}

// formatErr checks OIP-EXT-CLS-005: each string is value:index:label, the
// value that of the class (FP32 tolerance), the label the fixture's.
func (r clsResult) formatErr() error {
	got, err := r.parse()
	if err != nil {
		return err
	}
	scores := identityOutput(clsInput()).Data.([]float32) // the classifier's OUTPUT0
	var list []error
	for i, c := range got {
		if c.index < 0 || c.index >= len(scores) {
			list = append(list, fmt.Errorf("class %d (%q): index %d is outside the %d classes", i, r.strings[i], c.index, len(scores)))
			continue
		}
		if want := float64(scores[c.index]); math.Abs(c.value-want) > 1e-4*math.Max(1, math.Abs(want)) {
			list = append(list, fmt.Errorf("class %d (%q): value %v, but class %d scored %v", i, r.strings[i], c.value, c.index, want))
		}
		if want := fixture.ClassifierLabels[c.index]; c.label != want {
			list = append(list, fmt.Errorf("class %d (%q): label %q, want %q (the classifier labels its classes a b c d)", i, r.strings[i], c.label, want))
		}
	}
	return errors.Join(list...)
}

var _ = Describe("REST classification", Over(TransportREST), Needs(specs.ExtClassification), func() {
	It("advertises classification in server metadata", Req("OIP-EXT-CLS-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtClassification)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtClassification)
		}))
	})

	It("returns the top classes of an output asked for with the classification parameter", Req("OIP-EXT-CLS-002", "OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
		NeedFixture("classifier")
		e := Post(ctx, "classifier", "", clsBody(clsCount))
		check := func(f func(clsResult) error) func(*Exchange) error {
			return func(e *Exchange) error {
				r, err := clsREST(e)
				if err != nil {
					return err
				}
				return f(r)
			}
		}
		VerifyReq("OIP-EXT-CLS-002", e).To(PassCheck(check(func(r clsResult) error {
			if len(r.strings) != clsCount {
				return fmt.Errorf("OUTPUT0 holds %d classes %q, want the %d asked for", len(r.strings), r.strings, clsCount)
			}
			return nil
		})))
		VerifyReq("OIP-EXT-CLS-003", e).To(PassCheck(check(func(r clsResult) error { return r.countErr(clsCount) })))
		VerifyReq("OIP-EXT-CLS-004", e).To(PassCheck(check(clsResult.orderErr)))
		VerifyReq("OIP-EXT-CLS-005", e).To(PassCheck(check(clsResult.formatErr)))
	})

	It("refuses a classification count that is not a number", Req("OIP-EXT-CLS-002"), func(ctx SpecContext) {
		NeedFixture("classifier")
		AfterNegative()
		Verify(Post(ctx, "classifier", "", clsBody("two"))).To(BeRejected())
	})
})

var _ = Describe("gRPC classification", Over(TransportGRPC), Needs(specs.ExtClassification), func() {
	It("advertises classification in server metadata", Req("OIP-EXT-CLS-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtClassification)
		}))
	})

	It("returns the top classes of an output asked for with an int64 classification parameter", Req("OIP-EXT-CLS-002", "OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005", "OIP-EXT-CLS-006"), func(ctx SpecContext) {
		NeedFixture("classifier")
		_, c := Infer(ctx, clsPB(int64(clsCount)))
		check := func(f func(clsResult) error) func(*pb.ModelInferResponse) error {
			return func(resp *pb.ModelInferResponse) error {
				r, err := clsGRPC(resp)
				if err != nil {
					return err
				}
				return f(r)
			}
		}
		VerifyReq("OIP-EXT-CLS-006", c).To(PassCheck(check(func(clsResult) error { return nil })))
		VerifyReq("OIP-EXT-CLS-002", c).To(PassCheck(check(func(r clsResult) error {
			if len(r.strings) != clsCount {
				return fmt.Errorf("OUTPUT0 holds %d classes %q, want the %d asked for", len(r.strings), r.strings, clsCount)
			}
			return nil
		})))
		VerifyReq("OIP-EXT-CLS-003", c).To(PassCheck(check(func(r clsResult) error { return r.countErr(clsCount) })))
		VerifyReq("OIP-EXT-CLS-004", c).To(PassCheck(check(clsResult.orderErr)))
		VerifyReq("OIP-EXT-CLS-005", c).To(PassCheck(check(clsResult.formatErr)))
	})

	It("refuses a classification count that is not an int64_param", Req("OIP-EXT-CLS-002"), func(ctx SpecContext) {
		NeedFixture("classifier")
		AfterNegative()
		req := clsPB(int64(clsCount))
		req.Outputs[0].Parameters["classification"] = &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: "two"}}
		_, c := Infer(ctx, req)
		if Answered(c) {
			Verify(c).To(BeRejected())
		}
	})
})

// OIP-EXT-CLS-007 (implied, Triton's behaviour; a warning): the classes of
// an output cannot go to a shared memory region. The output region is
// registered first, so that a refusal is for the combination and not for a
// missing region. Only where the server has both extensions and can map
// the suite's shared memory (a loopback target).

var _ = Describe("REST classification into shared memory", Over(TransportREST), Needs(specs.ExtClassification, specs.ExtSystemSharedMemory), func() {
	It("refuses classification of an output asked for in a shared memory region", Req("OIP-EXT-CLS-007"), func(ctx SpecContext) {
		NeedFixture("classifier")
		m := shmObject(64)
		region := shmRegionName("cls")
		if !Verify(shmRegister(ctx, region, m, 0, 64)).To(HaveStatus(http.StatusOK), "registering the output region must succeed for the combination to be checked") {
			return
		}
		b := clsBody(clsCount)
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{"classification": clsCount, "shared_memory_region": region, "shared_memory_byte_size": 64}}}
		Verify(Post(ctx, "classifier", "", b)).To(BeRejected())
	})
})

var _ = Describe("gRPC classification into shared memory", Over(TransportGRPC), Needs(specs.ExtClassification, specs.ExtSystemSharedMemory), func() {
	It("refuses classification of an output asked for in a shared memory region", Req("OIP-EXT-CLS-007"), func(ctx SpecContext) {
		NeedFixture("classifier")
		m := shmObject(64)
		region := shmRegionName("cls")
		if !Verify(grpcSHMRegister(ctx, region, m, 0, 64)).To(BeOK(), "registering the output region must succeed for the combination to be checked") {
			return
		}
		req := clsPB(int64(clsCount))
		maps.Copy(req.Outputs[0].Parameters, shmParams(region, 0, 64))
		_, c := Infer(ctx, req)
		Verify(c).To(BeRejected())
	})
})

// Classification of every output datatype: the rows and the grading are
// in ext_cls_types.go.

var _ = Describe("REST classification of every output datatype", Over(TransportREST), Needs(specs.ExtClassification), func() {
	for _, d := range clsNumeric {
		if d == tensor.FP16 || d == tensor.BF16 {
			continue // no JSON form: the binary specs below
		}
		It(fmt.Sprintf("classifies an output of %s in the datatype's own order, values exact, sent as JSON", d), Req("OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
			needIdentity(d)
			clsTypeREST(ctx, clsTypeRow(d, false), false)
		})
	}
	It("classifies equal INT32 elements in either order", Req("OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
		needIdentity(tensor.Int32)
		clsTypeREST(ctx, clsTieRow(), false)
	})
})

var _ = Describe("REST classification of binary outputs beyond JSON", Over(TransportREST), Needs(specs.ExtClassification, specs.ExtBinaryTensorData), func() {
	for _, d := range []tensor.Datatype{tensor.Int64, tensor.Uint64, tensor.FP16, tensor.BF16} {
		It(fmt.Sprintf("classifies an output of %s in the datatype's own order, values exact, sent as binary data", d), Req("OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
			needIdentity(d)
			clsTypeREST(ctx, clsTypeRow(d, true), true)
		})
	}
})

var _ = Describe("gRPC classification of every output datatype", Over(TransportGRPC), Needs(specs.ExtClassification), func() {
	for _, d := range clsNumeric {
		It(fmt.Sprintf("classifies an output of %s in the datatype's own order, values exact", d), Req("OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
			needIdentity(d)
			clsTypeGRPC(ctx, clsTypeRow(d, true))
		})
	}
	It("classifies equal INT32 elements in either order", Req("OIP-EXT-CLS-003", "OIP-EXT-CLS-004", "OIP-EXT-CLS-005"), func(ctx SpecContext) {
		needIdentity(tensor.Int32)
		clsTypeGRPC(ctx, clsTieRow())
	})
})

// Classification of an output without an order runs after the rest
// (RunsVeryLast): one such request over REST makes Triton 2.51 exit. gRPC
// is asked first, so that a server dying over REST still has its gRPC
// answer graded.
var _ = Describe("gRPC classification of outputs without a numeric order", RunsVeryLast, Over(TransportGRPC), Needs(specs.ExtClassification), func() {
	for _, d := range []tensor.Datatype{tensor.Bool, tensor.Bytes} {
		It(fmt.Sprintf("refuses classification of a %s output with a client error, or answers it in order", d), Req("OIP-EXT-CLS-004"), func(ctx SpecContext) {
			needIdentity(d)
			AfterNegative()
			clsUnorderedGRPC(ctx, d)
		})
	}
})

var _ = Describe("REST classification of outputs without a numeric order", RunsVeryLast, Over(TransportREST), Needs(specs.ExtClassification), func() {
	for _, d := range []tensor.Datatype{tensor.Bool, tensor.Bytes} {
		It(fmt.Sprintf("refuses classification of a %s output with a client error, or answers it in order", d), Req("OIP-EXT-CLS-004"), func(ctx SpecContext) {
			needIdentity(d)
			AfterNegative()
			clsUnorderedREST(ctx, d)
		})
	}
})
