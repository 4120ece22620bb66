package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-REST-DATA: tensor data in JSON.

// jsonDataReq maps each datatype to the requirement its JSON form falls under.
func jsonDataReq(d tensor.Datatype) string {
	switch d {
	case tensor.Bool:
		return "OIP-REST-DATA-006"
	case tensor.FP32, tensor.FP64:
		return "OIP-REST-DATA-008"
	case tensor.FP16, tensor.BF16:
		return "OIP-REST-DATA-009"
	case tensor.Bytes:
		return "OIP-REST-DATA-010"
	}
	return "OIP-REST-DATA-007"
}

var _ = Describe("REST tensor data in JSON", Over(TransportREST), func() {
	for _, d := range tensor.Datatypes {
		req := jsonDataReq(d)
		if d == tensor.FP16 || d == tensor.BF16 {
			It(fmt.Sprintf("answers %s JSON data with 200 or a 4xx, never a 5xx", d), Req(req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
				NeedFixture(identityFixture(d))
				AfterNegative()
				in := sample("INPUT0", d)
				e := Post(ctx, identityFixture(d), "", Request(JSONInput(in)))
				if !Answered(e) {
					return
				}
				// The catalog: "A 5xx is a FAIL".
				Verify(errStatusReq, e).To(AvoidServerError())
				switch {
				case e.Status == http.StatusOK:
					Note(req, "%s over JSON was accepted", d)
					Verify(req, e).To(HaveOutputsNear(renamed(in, "OUTPUT0")))
				case e.Status >= 500:
					Verify(req, e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), fmt.Sprintf("want 200 or a 4xx (%s in JSON is undefined, A-06)", d))
				default:
					Note(req, "%s over JSON was rejected with %d", d, e.Status)
					Verify("OIP-REST-ERR-001", e).To(HaveErrorBody())
				}
			})
			continue
		}
		It(fmt.Sprintf("round-trips %s through identity as JSON", d), Req(req), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := jsonSafeSample("INPUT0", d)
			Verify(req, Post(ctx, identityFixture(d), "", Request(JSONInput(in)))).To(HaveOutputsNear(renamed(in, "OUTPUT0")))
		})
	}

	for _, d := range []tensor.Datatype{tensor.Int64, tensor.Uint64} {
		It(fmt.Sprintf("records whether %s values beyond 2^53 survive JSON", d), Req("OIP-REST-DATA-007"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := wideSample("INPUT0", d)
			e := Post(ctx, identityFixture(d), "", Request(JSONInput(in)))
			// report precision loss, do not grade it. Only a missing
			// answer is a finding.
			if Answered(e) {
				Note("OIP-REST-DATA-007", "%s beyond 2^53 over JSON: %s", d, wideOutcome(e, in))
			}
		})
	}

	It("keeps row-major order for a [2,3] tensor", Req("OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-RESP-011"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		e := Post(ctx, "identity_int32", "", Request(JSONInput(in)))
		for _, req := range []string{"OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-RESP-011"} {
			Verify(req, e).To(HaveOutputs(renamed(in, "OUTPUT0")))
		}
	})

	It("accepts nested and flat data as the same tensor", Req("OIP-REST-DATA-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		ji := JSONInput(in)
		ji["data"] = Nested(JSONValues(in), in.Shape)
		Verify("OIP-REST-DATA-003", Post(ctx, "identity_int32", "", Request(ji))).To(HaveOutputs(renamed(in, "OUTPUT0")))
	})

	It("rejects scalar data that is not an array", Req("OIP-REST-DATA-004", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		AfterNegative()
		ji := JSONInput(int32s("INPUT0", []int64{1, 1}, 5))
		ji["data"] = 5
		rejects(Post(ctx, "identity_int32", "", Request(ji)), "OIP-REST-DATA-004", "OIP-REST-ERR-001", rejection{})
	})

	It("coerces or rejects elements of another JSON type, never with a 5xx", Req("OIP-REST-DATA-005", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		NeedFixture("identity_fp32")
		AfterNegative()
		cases := []struct {
			model string
			in    Obj
		}{
			// json.Number keeps the literal: encoding/json writes 1.0 as 1.
			{"identity_int32", Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{1, 2}, "data": []any{json.Number("1.0"), json.Number("2.0")}}},
			{"identity_fp32", Obj{"name": "INPUT0", "datatype": "FP32", "shape": []int{1, 2}, "data": []any{1, 2}}},
			{"identity_int32", Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{1, 1}, "data": []any{"1"}}},
		}
		for _, c := range cases {
			e := Post(ctx, c.model, "", Request(c.in))
			if !Answered(e) {
				continue
			}
			Verify(errStatusReq, e).To(AvoidServerError())
			switch {
			case e.Status >= 500:
				Verify("OIP-REST-DATA-005", e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), c.model+": want 200 (coerced) or a 4xx")
			case e.Status != http.StatusOK:
				Verify("OIP-REST-ERR-001", e).To(HaveErrorBody())
			}
		}
	})

	It("rejects ragged nesting", Req("OIP-REST-DATA-011", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		AfterNegative()
		ji := Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{2, 2}, "data": []any{[]any{1, 2}, []any{3}}}
		rejects(Post(ctx, "identity_int32", "", Request(ji)), "OIP-REST-DATA-011", "OIP-REST-ERR-001", rejection{soft500: "A-18"})
	})

	It("records how an empty tensor is handled", Req("OIP-REST-DATA-012"), func(ctx SpecContext) {
		NeedFixture("identity_fp32")
		AfterNegative()
		ji := Obj{"name": "INPUT0", "datatype": "FP32", "shape": []int{1, 0}, "data": []any{}}
		e := Post(ctx, "identity_fp32", "", Request(ji))
		if !Answered(e) {
			return
		}
		Note("OIP-REST-DATA-012", "an empty [1,0] tensor answered %d", e.Status)
		if e.Status >= 500 {
			Verify("OIP-REST-DATA-012", e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), "want 200 or a 4xx")
		}
	})
})

// wideOutcome describes what came back for wideSample values: exact,
// altered (precision lost), or refused.
func wideOutcome(e *Exchange, in tensor.Tensor) string {
	if e.Status != http.StatusOK {
		return fmt.Sprintf("refused with %d", e.Status)
	}
	r, err := e.AsInferResponse()
	if err != nil {
		return "unreadable answer: " + err.Error()
	}
	o := r.Output("OUTPUT0")
	if o == nil {
		return "OUTPUT0 missing"
	}
	var got []json.Number
	dec := json.NewDecoder(bytes.NewReader(o.Fields["data"]))
	dec.UseNumber()
	if dec.Decode(&got) != nil {
		return "data is not a flat array of numbers: " + clipped(string(o.Fields["data"]), 120)
	}
	want := make([]string, in.Len())
	for i := range want {
		want[i] = fmt.Sprint(Element(in, i))
	}
	for i, w := range want {
		if i >= len(got) || string(got[i]) != w {
			return fmt.Sprintf("precision lost: sent %v, got %v", want, got)
		}
	}
	return "exact"
}
