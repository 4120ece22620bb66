package suite

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-REST-INFER: the REST inference request.

var _ = Describe("REST inference", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("answers a valid add_sub request with 200 and the sums and differences", Req("OIP-REST-INFER-001", "OIP-REST-INFER-023"), func(ctx SpecContext) {
		b, out0, out1 := addSubRequest()
		e := Post(ctx, "add_sub", "", b)
		VerifyReq("OIP-REST-INFER-001", e).To(HaveOutputs(out0, out1))
		VerifyReq("OIP-REST-INFER-023", e).To(HaveStatus(http.StatusOK))
	})

	It("returns every output when outputs is omitted", Req("OIP-REST-INFER-016"), func(ctx SpecContext) {
		b, out0, out1 := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOutputs(out0, out1))
	})

	It("returns a requested output", Req("OIP-REST-INFER-017"), func(ctx SpecContext) {
		b, _, out1 := addSubRequest()
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT1"}}
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOutputs(out1))
	})

	It("leaves out outputs that were not requested", Req("OIP-REST-INFER-018"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT1"}}
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOnlyOutputs("OUTPUT1"))
	})

	It("runs a batch of three rows and returns the whole batch", Req("OIP-REST-INFER-013", "OIP-REST-RESP-010"), func(ctx SpecContext) {
		in0, in1 := addSubInputs(3)
		out0, out1 := addSubOutputs(in0, in1)
		e := Post(ctx, "add_sub", "", Request(JSONInput(in0), JSONInput(in1)))
		VerifyReq("OIP-REST-INFER-013", e).To(HaveOutputs(out0, out1))
		VerifyReq("OIP-REST-RESP-010", e).To(HaveOutputs(out0, out1))
		VerifyReq("OIP-REST-RESP-010", e).To(PassCheck(func(r *InferResponse) error {
			for _, o := range r.Outputs {
				if len(o.Shape) == 0 || o.Shape[0] != 3 {
					return fmt.Errorf("output %q: shape %v, want [3 16]", o.Name, o.Shape)
				}
			}
			return nil
		}))
	})
})

var _ = Describe("REST inference ids and parameters", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	for _, tc := range []struct{ what, id string }{
		{"a plain id", "42"},
		{"a UTF-8 id", "é-✓"},
		{"a 1 KiB id", strings.Repeat("0123456789abcdef", 64)},
		{"an id with quotes, backslashes, control characters, NUL and astral characters", oddID},
	} {
		It("echoes "+tc.what+" in the response", Req("OIP-REST-INFER-006", "OIP-REST-RESP-004"), func(ctx SpecContext) {
			b, _, _ := addSubRequest()
			b.JSON["id"] = tc.id
			e := Post(ctx, "add_sub", "", b)
			VerifyReq("OIP-REST-INFER-006", e).To(HaveResponseID(tc.id))
			VerifyReq("OIP-REST-RESP-004", e).To(HaveResponseID(tc.id))
		})
	}

	It("answers a numeric id with an error or by coercing it, never a 5xx", Req("OIP-REST-INFER-007", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		AfterNegative()
		b, _, _ := addSubRequest()
		b.JSON["id"] = 42
		e := Post(ctx, "add_sub", "", b)
		if !Answered(e) {
			return
		}
		VerifyReq(errStatusReq, e).To(AvoidServerError())
		switch {
		case e.Status >= 500:
			VerifyReq("OIP-REST-INFER-007", e).AsServerFault().To(HaveStatus(http.StatusBadRequest, http.StatusOK), "want 400, or 200 with id \"42\"")
		case e.Status == http.StatusOK:
			Note("OIP-REST-INFER-007", "a numeric id was accepted")
			// Accepting the number is the server's choice; echoing it as
			// anything but the string "42" is not.
			VerifyReq("OIP-REST-INFER-007", e).To(PassCheck(func(r *InferResponse) error {
				if raw, ok := r.Top["id"]; ok && string(raw) != `"42"` {
					return fmt.Errorf("a numeric id 42 was accepted but echoed as %s, want \"42\"", clipped(string(raw), 80))
				}
				return nil
			}))
		default:
			VerifyReq("OIP-REST-ERR-001", e).To(HaveErrorBody())
		}
	})

	It("accepts empty parameters on the request", Req("OIP-REST-INFER-008"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.JSON["parameters"] = Obj{}
		Verify(Post(ctx, "add_sub", "", b)).To(HaveStatus(http.StatusOK))
	})

	It("accepts empty parameters on an input", Req("OIP-REST-INFER-015"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		input0(b)["parameters"] = Obj{}
		Verify(Post(ctx, "add_sub", "", b)).To(HaveStatus(http.StatusOK))
	})
})

var _ = Describe("REST versioned inference", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("versioned") })

	It("runs the version named in the path", Req("OIP-REST-INFER-002"), func(ctx SpecContext) {
		NeedVersions()
		for _, v := range []int32{1, 2} {
			ver := fmt.Sprint(v)
			in := int32s("INPUT0", []int64{1}, 10)
			e := Post(ctx, "versioned", ver, Request(JSONInput(in)))
			Verify(e).To(HaveOutputs(versionedOutput(v, in)))
			if e.Status != http.StatusOK {
				continue
			}
			Verify(e).To(PassCheck(func(r *InferResponse) error {
				if raw, ok := r.Top["model_version"]; ok {
					var got string
					if json.Unmarshal(raw, &got) != nil || (got != "" && got != ver) {
						return fmt.Errorf("model_version is %s, want %q", raw, ver)
					}
				}
				return nil
			}))
		}
	})

	It("runs a version of its choice or answers an error when no version is given", Req("OIP-REST-INFER-003"), func(ctx SpecContext) {
		in := int32s("INPUT0", []int64{1}, 10)
		e := Post(ctx, "versioned", "", Request(JSONInput(in)))
		if !Answered(e) {
			return
		}
		if e.Status != http.StatusOK {
			Note("OIP-REST-INFER-003", "unversioned inference answered %d", e.Status)
			Verify(e).To(HaveErrorBody())
			return
		}
		Verify(e).To(PassCheck(func(r *InferResponse) error {
			t, err := r.Tensor("OUTPUT0")
			if err != nil {
				return err
			}
			v, err := versionThatRan(in, t)
			if err == nil {
				Note("OIP-REST-INFER-003", "unversioned inference ran version %d", v)
			}
			return err
		}))
	})
})

var _ = Describe("REST inference errors", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	restRejectSpecs(
		restCase{text: "an unknown model", req: "OIP-REST-INFER-022", model: "does_not_exist", body: addSubWith(func(Body) {})},
		restCase{text: "an empty body", req: "OIP-REST-INFER-004", want4xx: true, body: literal("")},
		restCase{text: "a body that is not valid JSON", req: "OIP-REST-INFER-024", want4xx: true, body: literal(`{"inputs": [`)},
		restCase{text: "a body without inputs", req: "OIP-REST-INFER-005", body: literal(`{}`)},
		restCase{text: "a body with outputs but no inputs", req: "OIP-REST-INFER-005", body: literal(`{"outputs": []}`)},
		restCase{text: "an input without a name", req: "OIP-REST-INFER-009", body: addSubWith(func(b Body) { delete(input0(b), "name") })},
		restCase{text: "an input without a shape", req: "OIP-REST-INFER-009", body: addSubWith(func(b Body) { delete(input0(b), "shape") })},
		restCase{text: "an input without a datatype", req: "OIP-REST-INFER-009", body: addSubWith(func(b Body) { delete(input0(b), "datatype") })},
		restCase{text: "an input without data", req: "OIP-REST-INFER-009", body: addSubWith(func(b Body) { delete(input0(b), "data") })},
		restCase{text: "a negative shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{-1, 16} })},
		restCase{text: "a fractional shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{1.5, 16} })},
		restCase{text: "a string shape dimension", req: "OIP-REST-INFER-010", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{"1", 16} })},
		restCase{text: "a datatype name that does not exist", req: "OIP-REST-INFER-011", body: addSubWith(func(b Body) { input0(b)["datatype"] = "FLOAT32" })},
		restCase{text: "a datatype other than the model's", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) { input0(b)["datatype"] = "FP32" })},
		restCase{text: "a shape other than the model's", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) {
			input0(b)["shape"] = []any{1, 15}
			input0(b)["data"] = input0(b)["data"].([]any)[:15]
		})},
		restCase{text: "15 elements for shape [1,16]", req: "OIP-REST-INFER-014", soft500: "A-18", body: addSubWith(func(b Body) {
			input0(b)["data"] = input0(b)["data"].([]any)[:15]
		})},
		restCase{text: "17 elements for shape [1,16]", req: "OIP-REST-INFER-014", soft500: "A-18", body: addSubWith(func(b Body) {
			input0(b)["data"] = append(input0(b)["data"].([]any), 16)
		})},
		restCase{text: "a rank-1 shape [16] for a [-1,16] input", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{16} })},
		restCase{text: "a rank-3 shape [1,1,16] for a [-1,16] input", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{1, 1, 16} })},
		restCase{text: "shape [2,8] (16 elements) for a [-1,16] input", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) { input0(b)["shape"] = []any{2, 8} })},
		restCase{text: "both inputs in another datatype than the model's", req: "OIP-REST-INFER-012", body: addSubWith(func(b Body) {
			for _, in := range b.Inputs() {
				in["datatype"] = "INT64"
			}
		})},
		restCase{text: "an extra input the model does not have", req: "OIP-REST-INFER-021", body: addSubWith(func(b Body) {
			extra := Obj{}
			for k, v := range input0(b) {
				extra[k] = v
			}
			extra["name"] = "INPUT2"
			b.JSON["inputs"] = append(b.JSON["inputs"].([]any), extra)
		})},
		restCase{text: "an unknown input name", req: "OIP-REST-INFER-021", body: addSubWith(func(b Body) { input0(b)["name"] = "NOPE" })},
		restCase{text: "a missing input", req: "OIP-REST-INFER-021", body: addSubWith(func(b Body) { b.JSON["inputs"] = b.JSON["inputs"].([]any)[:1] })},
		restCase{text: "a duplicated input", req: "OIP-REST-INFER-021", body: addSubWith(func(b Body) {
			ins := b.JSON["inputs"].([]any)
			b.JSON["inputs"] = append(ins, ins[0])
		})},
		restCase{text: "a requested output without a name", req: "OIP-REST-INFER-019", body: addSubWith(func(b Body) { b.JSON["outputs"] = []any{Obj{}} })},
		restCase{text: "a requested output the model does not have", req: "OIP-REST-INFER-020", body: addSubWith(func(b Body) { b.JSON["outputs"] = []any{Obj{"name": "NOPE"}} })},
	)

	// the spec is silent on rank-0 tensors, so a server may read
	// shape [] as a scalar; sent to a [-1,-1] input it is still a rank the
	// model does not have, which a server that accepts it is only warned
	// for.
	It("rejects a scalar (shape []) for a [-1,-1] input with an error status and {\"error\": string}", Req("OIP-REST-INFER-012", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_fp32")
		AfterNegative()
		e := Post(ctx, "identity_fp32", "", Request(Obj{"name": "INPUT0", "datatype": "FP32", "shape": []int{}, "data": []any{1.5}}))
		rejects(e, "OIP-REST-INFER-012", "OIP-REST-ERR-001", rejection{soft: "A-35"})
	})

	// On add_sub, not the versioned fixture: every runtime deploys it
	// (versions.go says which versions are unknown).
	It("answers inference on versions add_sub does not have with an error", Req("OIP-REST-INFER-002", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		AfterNegative()
		askVersionsREST(ctx, restVersionGrading{id: "OIP-REST-INFER-002", req: "OIP-REST-INFER-002", faultReq: errStatusReq,
			refused: func(e *Exchange) { unknownModel(e, "OIP-REST-INFER-002", "OIP-REST-ERR-001", "") }},
			func(v string) *Exchange {
				b, _, _ := addSubRequest()
				return Post(ctx, "add_sub", v, b)
			})
	})
})

var _ = Describe("REST inference errors", Over(TransportREST), Needs(specs.ExtBinaryTensorData), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	for _, n := range []int{15, 17} {
		It(fmt.Sprintf("rejects %d binary elements for shape [1,16] with an error status and {\"error\": string}", n), Req("OIP-REST-INFER-014", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			AfterNegative()
			// INPUT0's buffer cut or padded to n INT32 elements, its
			// binary_data_size saying so, its shape still [1,16].
			in0, in1 := addSubInputs(1)
			raw, _ := tensor.EncodeRaw(in0)
			raw = append(raw, make([]byte, 4)...)[:4*n]
			b := Body{JSON: Obj{"id": RequestID, "inputs": []any{Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{1, 16},
				"parameters": Obj{oip.ParamBinaryDataSize: len(raw)}}}}, Bin: [][]byte{raw}}
			addBinary(&b, in1)
			rejects(Post(ctx, "add_sub", "", b), "OIP-REST-INFER-014", "OIP-REST-ERR-001", rejection{soft500: "A-18"})
		})
	}
})

// Inference on a model that never becomes ready (notready.go).
var _ = Describe("REST inference on a model that is not ready", Over(TransportREST), func() {
	neverReadyRESTInferSpec()
})
