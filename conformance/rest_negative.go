package conformance

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
)

// restCase is a malformed REST inference request and the requirement it
// violates. Cases are data; rejection is the one check.
type restCase struct {
	text  string
	req   string
	model string
	body  func() []byte
	// soft500 is the ambiguity that downgrades an HTTP 500 to a warning.
	soft500 string
	// want4xx: the requirement's own test asks for a 4xx, so a 5xx fails
	// it as well as OIP-REST-ERR-003 (see rejection).
	want4xx bool
}

// addSubWith returns an add_sub JSON body after mutate has changed it.
func addSubWith(mutate func(b restBody)) func() []byte {
	return func() []byte {
		b, _, _ := addSubRequest()
		mutate(b)
		body, _ := b.encode()
		return body
	}
}

// input0 returns add_sub's first input object of b.
func input0(b restBody) obj { return b.json["inputs"].([]any)[0].(obj) }

func literal(s string) func() []byte { return func() []byte { return []byte(s) } }

var restCases = []restCase{
	{text: "an unknown model", req: "OIP-REST-INFER-022", model: "does_not_exist", body: addSubWith(func(restBody) {})},
	{text: "an empty body", req: "OIP-REST-INFER-004", want4xx: true, body: literal("")},
	{text: "a body that is not valid JSON", req: "OIP-REST-INFER-024", want4xx: true, body: literal(`{"inputs": [`)},
	{text: "a body without inputs", req: "OIP-REST-INFER-005", body: literal(`{}`)},
	{text: "a body with outputs but no inputs", req: "OIP-REST-INFER-005", body: literal(`{"outputs": []}`)},
	{text: "an input without a name", req: "OIP-REST-INFER-009", body: addSubWith(func(b restBody) { delete(input0(b), "name") })},
	{text: "an input without a shape", req: "OIP-REST-INFER-009", body: addSubWith(func(b restBody) { delete(input0(b), "shape") })},
	{text: "an input without a datatype", req: "OIP-REST-INFER-009", body: addSubWith(func(b restBody) { delete(input0(b), "datatype") })},
	{text: "an input without data", req: "OIP-REST-INFER-009", body: addSubWith(func(b restBody) { delete(input0(b), "data") })},
	{text: "a negative shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b restBody) { input0(b)["shape"] = []any{-1, 16} })},
	{text: "a fractional shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b restBody) { input0(b)["shape"] = []any{1.5, 16} })},
	{text: "a string shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b restBody) { input0(b)["shape"] = []any{"1", 16} })},
	{text: "a datatype name that does not exist", req: "OIP-REST-INFER-011", body: addSubWith(func(b restBody) { input0(b)["datatype"] = "FLOAT32" })},
	{text: "a datatype other than the model's", req: "OIP-REST-INFER-012", body: addSubWith(func(b restBody) { input0(b)["datatype"] = "FP32" })},
	{text: "a shape other than the model's", req: "OIP-REST-INFER-012", body: addSubWith(func(b restBody) {
		input0(b)["shape"] = []any{1, 15}
		input0(b)["data"] = input0(b)["data"].([]any)[:15]
	})},
	{text: "15 elements for shape [1,16]", req: "OIP-REST-INFER-014", soft500: "A-18", body: addSubWith(func(b restBody) {
		input0(b)["data"] = input0(b)["data"].([]any)[:15]
	})},
	{text: "17 elements for shape [1,16]", req: "OIP-REST-INFER-014", soft500: "A-18", body: addSubWith(func(b restBody) {
		input0(b)["data"] = append(input0(b)["data"].([]any), 16)
	})},
	{text: "an unknown input name", req: "OIP-REST-INFER-021", body: addSubWith(func(b restBody) { input0(b)["name"] = "NOPE" })},
	{text: "a missing input", req: "OIP-REST-INFER-021", body: addSubWith(func(b restBody) { b.json["inputs"] = b.json["inputs"].([]any)[:1] })},
	{text: "a duplicated input", req: "OIP-REST-INFER-021", body: addSubWith(func(b restBody) {
		ins := b.json["inputs"].([]any)
		b.json["inputs"] = append(ins, ins[0])
	})},
	{text: "a requested output without a name", req: "OIP-REST-INFER-019", body: addSubWith(func(b restBody) { b.json["outputs"] = []any{obj{}} })},
	{text: "a requested output the model does not have", req: "OIP-REST-INFER-020", body: addSubWith(func(b restBody) { b.json["outputs"] = []any{obj{"name": "NOPE"}} })},
	{text: "a datatype name in lower case", req: "OIP-GEN-003", body: addSubWith(func(b restBody) { input0(b)["datatype"] = "int32" })},
	{text: "an input name in a different case", req: "OIP-GEN-003", body: addSubWith(func(b restBody) { input0(b)["name"] = "input0" })},
	{text: "a model name in a different case", req: "OIP-GEN-003", model: "Add_Sub", body: addSubWith(func(restBody) {})},
}

var _ = Describe("REST inference errors", Over(TransportREST), func() {
	BeforeEach(func() { needFixture("add_sub") })

	for _, c := range restCases {
		It("rejects "+c.text+" with an error status and {\"error\": string}", Req(c.req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			afterNegative()
			model := c.model
			if model == "" {
				model = "add_sub"
			}
			e := tgt.postRaw(ctx, model, nil, c.body())
			fs := rejection(e, c.req, "OIP-REST-ERR-001", c.soft500, c.want4xx)
			if c.model != "" {
				// an unknown model may be answered 400 or 404.
				fs = append(unknownModel(e, c.req, "OIP-REST-ERR-001"), serverFault(e))
			}
			if c.req == "OIP-GEN-003" {
				// case sensitivity is a KS-REQ rule that OIP dropped,
				// so accepting the other case is only a warning. A 5xx is
				// still a server fault (OIP-REST-ERR-003).
				for i := range fs {
					if fs[i].req == c.req {
						fs[i].soft = "A-37"
					}
				}
			}
			grade(fs...)
		})
	}

	It("sends a non-empty error message", Req("OIP-REST-ERR-004"), func(ctx SpecContext) {
		afterNegative()
		e := tgt.postRaw(ctx, "add_sub", nil, []byte(`{"inputs": [`))
		err := e.errorBody()
		if err == nil {
			m, _ := decodeObject(e.body)
			if s, _ := stringField(m, "error"); s == "" {
				err = fmt.Errorf("error message is empty")
			}
		}
		grade(on("OIP-REST-ERR-004", e, err))
	})

	It("serves error bodies as application/json", Req("OIP-REST-ERR-005"), func(ctx SpecContext) {
		afterNegative()
		e := tgt.postRaw(ctx, "add_sub", nil, []byte(`{"inputs": [`))
		err := e.answered()
		if ct := e.header.Get("Content-Type"); err == nil && !isJSONContentType(ct) {
			err = fmt.Errorf("error response Content-Type %q, want application/json", ct)
		}
		grade(on("OIP-REST-ERR-005", e, err))
	})

	It("includes the error member in every error body", Req("OIP-REST-ERR-006"), func(ctx SpecContext) {
		afterNegative()
		var fs []finding
		for _, body := range []string{`{}`, `{"inputs": [`} {
			e := tgt.postRaw(ctx, "add_sub", nil, []byte(body))
			fs = append(fs, on("OIP-REST-ERR-006", e, e.errorBody()))
		}
		grade(fs...)
	})

	It("answers inference on an unknown version with an error", Req("OIP-REST-INFER-002", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		needVersions()
		afterNegative()
		e := tgt.post(ctx, "versioned", "99", request(jsonInput(int32s("INPUT0", []int64{1}, 1))))
		grade(append(unknownModel(e, "OIP-REST-INFER-002", "OIP-REST-ERR-001"), serverFault(e))...)
	})
})
