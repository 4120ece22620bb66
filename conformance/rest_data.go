package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/tensor"
)

// identityFixture is the identity fixture of datatype d ("identity_fp32").
func identityFixture(d tensor.Datatype) string { return "identity_" + d.Lower() }

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
				needFixture(identityFixture(d))
				afterNegative()
				in := sample("INPUT0", d)
				e := tgt.post(ctx, identityFixture(d), "", request(jsonInput(in)))
				err := e.answered()
				fs := []finding{serverFault(e)}
				switch {
				case err != nil:
				case e.status == http.StatusOK:
					r, perr := parseInfer(e)
					if err = perr; err == nil {
						err = r.expect(false, renamed(in, "OUTPUT0"))
					}
					note(req, "%s over JSON was accepted", d)
				case e.status >= 500:
					// The catalog: "A 5xx is a FAIL" (serverFault below).
					err = fmt.Errorf("%s, want 200 or a 4xx (%s in JSON is undefined, A-06)", e.got(), d)
				default:
					note(req, "%s over JSON was rejected with %d", d, e.status)
					fs = append(fs, on("OIP-REST-ERR-001", e, e.errorBody()))
				}
				grade(append(fs, on(req, e, err))...)
			})
			continue
		}
		It(fmt.Sprintf("round-trips %s through identity as JSON", d), Req(req), func(ctx SpecContext) {
			needFixture(identityFixture(d))
			in := jsonSafeSample("INPUT0", d)
			e, r, err := tgt.inferOK(ctx, identityFixture(d), "", request(jsonInput(in)))
			if err == nil {
				err = r.expect(false, renamed(in, "OUTPUT0"))
			}
			grade(on(req, e, err))
		})
	}

	for _, d := range []tensor.Datatype{tensor.Int64, tensor.Uint64} {
		It(fmt.Sprintf("records whether %s values beyond 2^53 survive JSON", d), Req("OIP-REST-DATA-007"), func(ctx SpecContext) {
			needFixture(identityFixture(d))
			in := wideSample("INPUT0", d)
			e := tgt.post(ctx, identityFixture(d), "", request(jsonInput(in)))
			// report precision loss, do not grade it. Only a missing
			// answer is a finding.
			if err := e.answered(); err != nil {
				grade(on("", e, err))
				return
			}
			note("OIP-REST-DATA-007", "%s beyond 2^53 over JSON: %s", d, wideOutcome(e, in))
		})
	}

	It("keeps row-major order for a [2,3] tensor", Req("OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-RESP-011"), func(ctx SpecContext) {
		needFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		e, r, err := tgt.inferOK(ctx, "identity_int32", "", request(jsonInput(in)))
		if err == nil {
			err = r.expect(true, renamed(in, "OUTPUT0"))
		}
		grade(on("OIP-REST-DATA-001", e, err), on("OIP-REST-DATA-002", e, err), on("OIP-REST-RESP-011", e, err))
	})

	It("accepts nested and flat data as the same tensor", Req("OIP-REST-DATA-003"), func(ctx SpecContext) {
		needFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		ji := jsonInput(in)
		ji["data"] = nested(jsonValues(in), in.Shape)
		e, r, err := tgt.inferOK(ctx, "identity_int32", "", request(ji))
		if err == nil {
			err = r.expect(true, renamed(in, "OUTPUT0"))
		}
		grade(on("OIP-REST-DATA-003", e, err))
	})

	It("rejects scalar data that is not an array", Req("OIP-REST-DATA-004", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		needFixture("identity_int32")
		afterNegative()
		ji := jsonInput(int32s("INPUT0", []int64{1, 1}, 5))
		ji["data"] = 5
		e := tgt.post(ctx, "identity_int32", "", request(ji))
		grade(rejection(e, "OIP-REST-DATA-004", "OIP-REST-ERR-001", "", false)...)
	})

	It("coerces or rejects elements of another JSON type, never with a 5xx", Req("OIP-REST-DATA-005", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		needFixture("identity_int32")
		needFixture("identity_fp32")
		afterNegative()
		cases := []struct {
			model string
			in    obj
		}{
			// json.Number keeps the literal: encoding/json writes 1.0 as 1.
			{"identity_int32", obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{1, 2}, "data": []any{json.Number("1.0"), json.Number("2.0")}}},
			{"identity_fp32", obj{"name": "INPUT0", "datatype": "FP32", "shape": []int{1, 2}, "data": []any{1, 2}}},
			{"identity_int32", obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{1, 1}, "data": []any{"1"}}},
		}
		var fs []finding
		for _, c := range cases {
			e := tgt.post(ctx, c.model, "", request(c.in))
			err := e.answered()
			switch {
			case err != nil:
			case e.status >= 500:
				err = fmt.Errorf("%s: %s, want 200 (coerced) or a 4xx", c.model, e.got())
			case e.status != http.StatusOK:
				fs = append(fs, on("OIP-REST-ERR-001", e, e.errorBody()))
			}
			fs = append(fs, on("OIP-REST-DATA-005", e, err), serverFault(e))
		}
		grade(fs...)
	})

	It("rejects ragged nesting", Req("OIP-REST-DATA-011", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		needFixture("identity_int32")
		afterNegative()
		ji := obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{2, 2}, "data": []any{[]any{1, 2}, []any{3}}}
		e := tgt.post(ctx, "identity_int32", "", request(ji))
		grade(rejection(e, "OIP-REST-DATA-011", "OIP-REST-ERR-001", "A-18", false)...)
	})

	It("records how an empty tensor is handled", Req("OIP-REST-DATA-012"), func(ctx SpecContext) {
		needFixture("identity_fp32")
		afterNegative()
		ji := obj{"name": "INPUT0", "datatype": "FP32", "shape": []int{1, 0}, "data": []any{}}
		e := tgt.post(ctx, "identity_fp32", "", request(ji))
		err := e.answered()
		if err == nil {
			note("OIP-REST-DATA-012", "an empty [1,0] tensor answered %d", e.status)
			if e.status >= 500 {
				err = fmt.Errorf("%s, want 200 or a 4xx", e.got())
			}
		}
		grade(on("OIP-REST-DATA-012", e, err))
	})
})

// wideOutcome describes what came back for wideSample values: exact,
// altered (precision lost), or refused.
func wideOutcome(e *exchange, in tensor.Tensor) string {
	if e.status != http.StatusOK {
		return fmt.Sprintf("refused with %d", e.status)
	}
	r, err := parseInfer(e)
	if err != nil {
		return "unreadable answer: " + err.Error()
	}
	o := r.output("OUTPUT0")
	if o == nil {
		return "OUTPUT0 missing"
	}
	var got []json.Number
	dec := json.NewDecoder(bytes.NewReader(o.fields["data"]))
	dec.UseNumber()
	if dec.Decode(&got) != nil {
		return "data is not a flat array of numbers: " + clip(string(o.fields["data"]), 120)
	}
	want := make([]string, in.Len())
	for i := range want {
		want[i] = fmt.Sprint(element(in, i))
	}
	for i, w := range want {
		if i >= len(got) || string(got[i]) != w {
			return fmt.Sprintf("precision lost: sent %v, got %v", want, got)
		}
	}
	return "exact"
}
