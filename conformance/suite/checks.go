package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	. "github.com/oipkit/oipkit/conformance/engine"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
)

// Checks made of several Verify calls, shared by several groups.

// errStatusReq grades the status code of rejected requests: 400 passes,
// another 4xx is a warning, a 5xx fails.
const errStatusReq = "OIP-REST-ERR-003"

// rejection says how a request the server must refuse is graded beyond the
// rule it breaks.
type rejection struct {
	// soft500 is the ambiguity that lets an HTTP 500 pass as a warning of
	// the rule and of OIP-REST-ERR-003 alike (A-18, element-count
	// mismatches, whose test expects a 4xx too).
	soft500 string
	// want4xx: the requirement's own test asks for a 4xx (an empty body,
	// OIP-REST-INFER-004; malformed JSON, OIP-REST-INFER-024), so a 5xx
	// also fails the requirement, as a server fault by its level.
	want4xx bool
	// soft, when set, grades every finding of the broken rule itself as a
	// warning, for the reason given (a catalog ambiguity).
	soft string
}

// verifyAs starts a check of req on x, or of the spec's one requirement when
// req is "": for the helpers below, which specs labelled with one
// requirement (they pass "") share with specs labelled with several.
func verifyAs(req string, x any) *Check {
	if req == "" {
		return Verify(x)
	}
	return VerifyReq(req, x)
}

// of starts a check of req on e (see verifyAs), softened when o says so.
func (o rejection) of(req string, e *Exchange) *Check {
	c := verifyAs(req, e)
	if o.soft != "" {
		c.Soft(o.soft)
	}
	return c
}

// rejects grades the REST answer to a request the server must refuse. req
// is the requirement the request breaks, bodyReq the one requiring the
// {"error": string} body; the spec must carry both labels and
// OIP-REST-ERR-003.
//
// Accepting the request is a negative result of req: lenient when the rule
// binds clients, graded by req when it binds servers. The catalog's "error
// response" is any status >= 400 with that body (§2 preamble), so a 5xx
// satisfies req itself and is judged once, under OIP-REST-ERR-003, which
// grades it fail whatever the level ("FAIL = 5xx"); see rejection for the
// two exceptions.
func rejects(e *Exchange, req, bodyReq string, o rejection) {
	if !Answered(e) || !o.of(req, e).To(BeRejected()) {
		return
	}
	switch {
	case e.Status == http.StatusInternalServerError && o.soft500 != "":
		VerifyReq(req, e).Soft(o.soft500).To(BeClientError())
		VerifyReq(errStatusReq, e).Soft(o.soft500).To(HaveTypicalErrorStatus())
	case e.Status >= 500 && (o.want4xx || o.soft500 != ""):
		o.of(req, e).AsServerFault().To(BeClientError())
		VerifyReq(errStatusReq, e).To(HaveTypicalErrorStatus())
	default:
		VerifyReq(errStatusReq, e).To(HaveTypicalErrorStatus())
	}
	VerifyReq(bodyReq, e).To(HaveErrorBody())
}

// unknownModel grades the answer for an unknown model or version: an error
// status with the error body; 400 and 404 both pass, another 4xx is a
// warning. soft, when set, softens every finding of req. A spec
// labelled with one requirement passes "" for req and bodyReq (verifyAs).
func unknownModel(e *Exchange, req, bodyReq, soft string) {
	o := rejection{soft: soft}
	if !Answered(e) || !o.of(req, e).To(BeRejected()) {
		return
	}
	if e.Status >= 500 {
		o.of(req, e).To(HaveStatus(400, 404))
	} else {
		verifyAs(req, e).Soft(firstOf(soft, "A-03")).To(HaveStatus(400, 404))
	}
	verifyAs(bodyReq, e).To(HaveErrorBody())
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// notReady grades a "false" health answer: 4xx passes (KS-REQ), 503 is a
// warning (A-02: KServe answers 503), any other 5xx is a server fault and
// 2xx/3xx claim readiness: both fail. req is "" in a spec labelled with one
// requirement (verifyAs).
func notReady(e *Exchange, req string) {
	if !Answered(e) {
		return
	}
	if e.Status == http.StatusServiceUnavailable {
		verifyAs(req, e).Soft("A-02").To(BeClientError())
		return
	}
	verifyAs(req, e).To(BeClientError())
}

// grpcRejects grades the answer to an RPC the server must refuse: any
// non-OK status from the server passes req; OK fails it (a negative result)
// and, when it carries no result, OIP-GRPC-SVC-002 (a failure reported
// in-band); a code other than the recommended ones is a finding of
// OIP-GRPC-ERR-002, an empty message a warning of OIP-GRPC-ERR-001's
// "descriptive message". The spec must carry those labels.
func grpcRejects(c *Call, req, soft string, want ...codes.Code) {
	if !Answered(c) {
		return
	}
	check := VerifyReq(req, c)
	if soft != "" {
		check.Soft(soft)
	}
	if !check.To(BeRejected()) {
		VerifyReq("OIP-GRPC-SVC-002", c).To(CarryResult())
		return
	}
	if len(want) > 0 {
		VerifyReq("OIP-GRPC-ERR-002", c).To(HaveCode(want...))
	}
	VerifyReq("OIP-GRPC-ERR-001", c).Soft("A-04").To(HaveStatusMessage())
}

// ----- metadata -----

// extensionsField returns server metadata's "extensions" array.
func extensionsField(m map[string]json.RawMessage) ([]string, error) {
	raw, ok := m["extensions"]
	if !ok {
		return nil, fmt.Errorf(`"extensions" is missing (an empty array is allowed)`)
	}
	var exts []string
	if err := json.Unmarshal(raw, &exts); err != nil || exts == nil {
		return nil, fmt.Errorf(`"extensions" is %s, want an array of strings`, clipped(string(raw), 120))
	}
	return exts, nil
}

// tensorMetadataList checks one "inputs"/"outputs" list (OIP-REST-MMETA-005)
// and returns it.
func tensorMetadataList(m map[string]json.RawMessage, key string) ([]tensorMeta, error) {
	raw, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("%q is missing", key)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fmt.Errorf("%q is %s, want an array of tensor metadata", key, clipped(string(raw), 120))
	}
	var out []tensorMeta
	var list []error
	for i, it := range items {
		var tm tensorMeta
		var err error
		if tm.name, err = StringField(it, "name"); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		if tm.datatype, err = StringField(it, "datatype"); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		if s, ok := it["shape"]; !ok {
			list = append(list, fmt.Errorf("%s[%d]: \"shape\" is missing", key, i))
		} else if tm.shape, err = ShapeField(s); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		out = append(out, tm)
	}
	return out, errors.Join(list...)
}

// wantTensors compares metadata tensors with the fixture contract by name.
func wantTensors(key string, got []tensorMeta, want ...tensorMeta) error {
	var list []error
	for _, w := range want {
		i := slices.IndexFunc(got, func(t tensorMeta) bool { return t.name == w.name })
		if i < 0 {
			list = append(list, fmt.Errorf("%s: %q is missing", key, w.name))
			continue
		}
		g := got[i]
		if g.datatype != w.datatype {
			list = append(list, fmt.Errorf("%s %q: datatype %q, want %q", key, w.name, g.datatype, w.datatype))
		}
		if !slices.Equal(g.shape, w.shape) {
			list = append(list, fmt.Errorf("%s %q: shape %v, want %v", key, w.name, g.shape, w.shape))
		}
	}
	return errors.Join(list...)
}

func pbTensors(ts []*pb.ModelMetadataResponse_TensorMetadata) []tensorMeta {
	out := make([]tensorMeta, len(ts))
	for i, t := range ts {
		out[i] = tensorMeta{t.GetName(), t.GetDatatype(), t.GetShape()}
	}
	return out
}

// clipped shortens s for a message.
func clipped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ----- tables of malformed REST requests -----

// restCase is a malformed REST inference request and the requirement it
// breaks. Cases are data; rejects is the one check.
type restCase struct {
	text  string
	req   string
	model string // "" means add_sub
	body  func() []byte
	// soft500 and want4xx: see rejection.
	soft500 string
	want4xx bool
	// soft, when set, grades a server that accepts the request as a warning
	// under req, for the reason given (a catalog ambiguity).
	soft string
}

// restRejectSpecs declares one spec per case in the enclosing container,
// which must need the add_sub fixture.
func restRejectSpecs(cases ...restCase) {
	for _, c := range cases {
		// Offset(1): the spec is located where the table is, in the file of
		// its group.
		It("rejects "+c.text+" with an error status and {\"error\": string}", Offset(1), Req(c.req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			AfterNegative()
			model := c.model
			if model == "" {
				model = "add_sub"
			}
			e := PostRaw(ctx, model, nil, c.body())
			if c.model != "" {
				// an unknown model may be answered 400 or 404.
				unknownModel(e, c.req, "OIP-REST-ERR-001", c.soft)
				VerifyReq(errStatusReq, e).To(AvoidServerError())
				return
			}
			rejects(e, c.req, "OIP-REST-ERR-001", rejection{soft500: c.soft500, want4xx: c.want4xx, soft: c.soft})
		})
	}
}

// ----- tables of malformed ModelInfer requests -----

// grpcCase is a malformed ModelInfer and the requirement it breaks.
type grpcCase struct {
	text  string
	req   string
	build func() *pb.ModelInferRequest
	codes []codes.Code // recommended codes (OIP-GRPC-ERR-002)
	// versions marks cases that need a server that versions models.
	versions bool
	// fixture, when set, is the fixture the case needs (the request may
	// name a model that does not exist, such as Add_Sub).
	fixture string
	// soft, when set, grades a server that accepts the request as a warning
	// under req, for the reason given (a catalog ambiguity).
	soft string
}

var invalid = []codes.Code{codes.InvalidArgument}

// grpcRejectSpecs declares one spec per case in the enclosing container.
func grpcRejectSpecs(cases ...grpcCase) {
	for _, c := range cases {
		It("answers "+c.text+" with a non-OK status", Offset(1), Req(c.req, "OIP-GRPC-SVC-002", "OIP-GRPC-ERR-001", "OIP-GRPC-ERR-002"), func(ctx SpecContext) {
			req := c.build()
			if c.versions {
				NeedVersions()
			}
			switch {
			case c.fixture != "":
				NeedFixture(c.fixture)
			case req.ModelName != "does_not_exist":
				NeedFixture(req.ModelName)
			}
			AfterNegative()
			_, call := Infer(ctx, req)
			grpcRejects(call, c.req, c.soft, c.codes...)
		})
	}
}

// jsonHeader is the Content-Type of a JSON request body.
func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

// succeeded reports whether an exchange got a success answer: REST 200, or
// a gRPC call that returned OK.
func succeeded(x Evidencer) bool {
	switch v := x.(type) {
	case *Exchange:
		return v.Err == nil && v.Status == http.StatusOK
	case *Call:
		return v.Err == nil
	}
	return true
}
