package suite

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/specs"
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
				VerifyReq(errStatusReq, e).To(AvoidServerError())
				switch {
				case e.Status == http.StatusOK:
					Note(req, "%s over JSON was accepted", d)
					VerifyReq(req, e).To(HaveOutputsNear(identityOutput(in)))
				case e.Status >= 500:
					VerifyReq(req, e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), fmt.Sprintf("want 200 or a 4xx (%s in JSON is undefined, A-06)", d))
				default:
					Note(req, "%s over JSON was rejected with %d", d, e.Status)
					VerifyReq("OIP-REST-ERR-001", e).To(HaveErrorBody())
				}
			})
			continue
		}
		It(fmt.Sprintf("round-trips %s through identity as JSON", d), Req(req), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := jsonSafeSample("INPUT0", d)
			Verify(Post(ctx, identityFixture(d), "", Request(JSONInput(in)))).To(HaveOutputsNear(identityOutput(in)))
		})
	}

	for _, d := range tensor.Datatypes {
		if d == tensor.FP16 || d == tensor.BF16 {
			continue // no JSON form: binary and raw carry their hard data
		}
		req := jsonDataReq(d)
		It(fmt.Sprintf("round-trips a %d-element %s tensor of edge values through identity as JSON", hardRows*hardCols, d), Req(req, "OIP-REST-INFER-006"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			in := hardTensor("INPUT0", d, formJSON)
			b := Request(JSONInput(in))
			b.JSON["id"] = "hard-" + d.Lower()
			e := Post(ctx, identityFixture(d), "", b)
			want := identityOutput(in)
			if VerifyReq(req, e).To(HaveOutputsNear(want)) {
				noteInexact(req, e, want)
			}
			VerifyReq("OIP-REST-INFER-006", e).To(HaveResponseID("hard-" + d.Lower()))
		})
	}

	It(fmt.Sprintf("accepts a %d-element tensor as nested data", hardRows*hardCols), Req("OIP-REST-DATA-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := hardTensor("INPUT0", tensor.Int32, formJSON)
		ji := JSONInput(in)
		ji["data"] = Nested(JSONValues(in), in.Shape)
		Verify(Post(ctx, "identity_int32", "", Request(ji))).To(HaveOutputs(identityOutput(in)))
	})

	for _, d := range []tensor.Datatype{tensor.FP32, tensor.FP64} {
		req := jsonDataReq(d)
		It(fmt.Sprintf("records how %s NaN and ±Infinity written as JSON strings are answered", d), Req(req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			// Strict JSON has no NaN or infinity; "NaN" and
			// "Infinity" as strings are a convention some servers read
			// (MLServer, Python). Refusing them is fine; only a 5xx, a
			// wrong error body or wrong finite values are findings.
			ji := Obj{"name": "INPUT0", "datatype": string(d), "shape": []int{1, 4}, "data": []any{"NaN", "Infinity", "-Infinity", 1.5}}
			e := Post(ctx, identityFixture(d), "", Request(ji))
			Tolerate(e, "A-22")
			specialsAnswer(e, req, "NaN, Infinity and -Infinity as JSON strings", []int{3}, []float64{1.5})
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

	It("refuses JSON integers one step beyond each integer type's range, never answering another value", Req("OIP-REST-DATA-013", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		AfterNegative()
		// One request per value (a refusal of one would hide what the
		// server does with the other), one finding for every type a
		// success changed: one defect.
		var changed, faults, refused []string
		var changedAt, faultAt *Exchange
		tried := 0
		for _, d := range integerTypes {
			if !Current().Deployed(identityFixture(d)) {
				Note("OIP-REST-DATA-013", "%s not tried: fixture %s is not deployed", d, identityFixture(d))
				continue
			}
			below, above := beyondRange(d)
			for _, v := range []*big.Int{below, above} {
				tried++
				ji := Obj{"name": "INPUT0", "datatype": string(d), "shape": []int{1, 1}, "data": []any{json.Number(v.String())}}
				e := Post(ctx, identityFixture(d), "", Request(ji))
				if !Answered(e) {
					continue
				}
				sent := fmt.Sprintf("%s %s", d, v)
				switch {
				case e.Status >= 500:
					faults = append(faults, fmt.Sprintf("%s (%d)", sent, e.Status))
					faultAt = cmp.Or(faultAt, e)
				case e.Status >= 400:
					refused = append(refused, fmt.Sprintf("%s (%d)", sent, e.Status))
				default:
					if _, _, err := outputElements(e); err != nil {
						// No OUTPUT0 to read (a wrong output name, say) is
						// not a changed value: the response rules grade it.
						Note("OIP-REST-DATA-013", "%s was answered %d with %v: not graded here", sent, e.Status, err)
						continue
					}
					if got := outOfRangeAnswer(e, v); got != "" {
						changed = append(changed, sent+" → "+got)
						changedAt = cmp.Or(changedAt, e)
					} else {
						Note("OIP-REST-DATA-013", "%s was answered unchanged (%d)", sent, e.Status)
					}
				}
			}
		}
		if tried == 0 {
			NeedFixture(identityFixture(tensor.Int8))
		}
		if len(refused) > 0 {
			Note("OIP-REST-DATA-013", "refused: %s", strings.Join(refused, ", "))
		}
		if faultAt != nil {
			// A 5xx is an error response, so the rule itself holds; the
			// server fault is judged once, under OIP-REST-ERR-003.
			VerifyReq(errStatusReq, faultAt).To(AvoidServerError(), "out-of-range integers answered with a server error: "+strings.Join(faults, ", "))
		}
		if changedAt != nil {
			VerifyReq("OIP-REST-DATA-013", changedAt).To(PassCheck(func(*Exchange) error {
				return fmt.Errorf("integers outside their datatype's range were answered with success and another value (neither coerced, which a value the type cannot hold cannot be, nor refused): %s", strings.Join(changed, "; "))
			}))
		}
	})

	It("keeps row-major order for a [2,3] tensor", Req("OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-RESP-011"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		e := Post(ctx, "identity_int32", "", Request(JSONInput(in)))
		for _, req := range []string{"OIP-REST-DATA-001", "OIP-REST-DATA-002", "OIP-REST-RESP-011"} {
			VerifyReq(req, e).To(HaveOutputs(identityOutput(in)))
		}
	})

	It("accepts nested and flat data as the same tensor", Req("OIP-REST-DATA-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		in := int32s("INPUT0", []int64{2, 3}, 1, 2, 3, 4, 5, 6)
		ji := JSONInput(in)
		ji["data"] = Nested(JSONValues(in), in.Shape)
		Verify(Post(ctx, "identity_int32", "", Request(ji))).To(HaveOutputs(identityOutput(in)))
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
			VerifyReq(errStatusReq, e).To(AvoidServerError())
			switch {
			case e.Status >= 500:
				VerifyReq("OIP-REST-DATA-005", e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), c.model+": want 200 (coerced) or a 4xx")
			case e.Status != http.StatusOK:
				VerifyReq("OIP-REST-ERR-001", e).To(HaveErrorBody())
			}
		}
	})

	It("rejects ragged nesting", Req("OIP-REST-DATA-011", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_int32")
		AfterNegative()
		ji := Obj{"name": "INPUT0", "datatype": "INT32", "shape": []int{2, 2}, "data": []any{[]any{1, 2}, []any{3}}}
		rejects(Post(ctx, "identity_int32", "", Request(ji)), "OIP-REST-DATA-011", "OIP-REST-ERR-001", rejection{soft500: "A-18"})
	})

	for _, d := range []tensor.Datatype{tensor.FP32, tensor.Bytes} {
		It(fmt.Sprintf("answers %s tensors with a 0 dimension as empty tensors, or refuses them, never with a 5xx", d), Req("OIP-REST-DATA-012", "OIP-REST-INFER-016", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			for _, shape := range [][]int64{{1, 0}, {0, 3}} {
				in := emptyTensor("INPUT0", d, shape)
				emptyAnswer(Post(ctx, identityFixture(d), "", Request(JSONInput(in))), identityOutput(in), "OIP-REST-DATA-012", "OIP-REST-INFER-016")
			}
		})
	}
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

var _ = Describe("REST tensor data in JSON", Over(TransportREST), Needs(specs.ExtBinaryTensorData), func() {
	// Binary data carries what JSON cannot: values sent that way and asked
	// back as JSON show what a server does with them. The catalog asks to
	// record it (A-22 for NaN and infinities, A-07 for BYTES that are not
	// UTF-8), so only a 5xx, a wrong error body or a wrong value JSON can
	// carry is a finding.
	for _, d := range []tensor.Datatype{tensor.FP16, tensor.BF16, tensor.FP32, tensor.FP64} {
		req := jsonDataReq(d)
		It(fmt.Sprintf("records how %s NaN and ±Infinity sent as binary data come back as JSON", d), Req(req, "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
			NeedFixture(identityFixture(d))
			AfterNegative()
			in := specialsTensor("INPUT0", d)
			e := Post(ctx, identityFixture(d), "", binaryRequest(in))
			Tolerate(e, "A-22")
			want := make([]float64, len(finiteIndexes))
			for i, at := range finiteIndexes {
				want[i] = floatOf(Element(in, at))
			}
			specialsAnswer(e, req, "NaN, -NaN, +Inf and -Inf sent as binary data", finiteIndexes, want)
		})
	}

	It("records how BYTES that are not UTF-8 sent as binary data come back as JSON", Req("OIP-REST-DATA-010", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		NeedFixture("identity_bytes")
		AfterNegative()
		in := oddBytesTensor("INPUT0")
		e := Post(ctx, "identity_bytes", "", binaryRequest(in))
		Tolerate(e, "A-07")
		if !recordedAnswer(e, "OIP-REST-DATA-010", "BYTES that are not UTF-8 sent as binary data") {
			return
		}
		got, raw, err := outputElements(e)
		if err != nil {
			Note("OIP-REST-DATA-010", "BYTES that are not UTF-8 came back as %v", err)
			return
		}
		Note("OIP-REST-DATA-010", "BYTES that are not UTF-8 (%q) came back in JSON as %s", in.Data, clipped(raw, 300))
		VerifyReq("OIP-REST-DATA-010", e).To(PassCheck(func(*Exchange) error {
			if len(got) != in.Len() {
				return fmt.Errorf("OUTPUT0 has %d elements, want %d", len(got), in.Len())
			}
			for _, i := range utf8Indexes {
				if w := string(in.Data.([][]byte)[i]); got[i] != w {
					return fmt.Errorf("OUTPUT0 element %d is %v, want %q (valid UTF-8, which JSON carries)", i, got[i], w)
				}
			}
			return nil
		}))
	})
})

// recordedAnswer handles the answer to a request whose outcome the catalog
// asks to record: no answer is a finding, a 5xx fails OIP-REST-ERR-003, a
// refusal is noted and must carry {"error": string}. It reports whether the
// request succeeded (200).
func recordedAnswer(e *Exchange, req, what string) bool {
	if !Answered(e) {
		return false
	}
	VerifyReq(errStatusReq, e).To(AvoidServerError())
	switch {
	case e.Status == http.StatusOK:
		return true
	case e.Status >= 400 && e.Status < 500:
		Note(req, "%s: refused with %d", what, e.Status)
		VerifyReq("OIP-REST-ERR-001", e).To(HaveErrorBody())
	case e.Status < 400:
		VerifyReq(req, e).To(HaveStatus(http.StatusOK, http.StatusBadRequest), what+": want 200 or an error response")
	}
	return false
}

// specialsAnswer records how a server answered NaN and infinities in JSON
// and checks the finite elements at the given flat indexes.
func specialsAnswer(e *Exchange, req, what string, at []int, want []float64) {
	if !recordedAnswer(e, req, what) {
		return
	}
	got, raw, err := outputElements(e)
	if err != nil {
		Note(req, "%s: answered 200 with %v", what, err)
		return
	}
	Note(req, "%s came back in JSON as %s", what, clipped(raw, 300))
	VerifyReq(req, e).To(PassCheck(func(*Exchange) error {
		for i, idx := range at {
			if idx >= len(got) {
				return fmt.Errorf("OUTPUT0 has %d elements, want element %d (%v)", len(got), idx, want[i])
			}
			n, ok := got[idx].(json.Number)
			f, err := n.Float64()
			if !ok || err != nil || !sameFloat(f, want[i]) {
				return fmt.Errorf("OUTPUT0 element %d is %v, want %v (a finite value, which JSON carries)", idx, got[idx], want[i])
			}
		}
		return nil
	}))
}

// sameFloat compares a JSON number with a float, by value (-0 as 0), within
// the precision of the narrowest float sent.
func sameFloat(got, want float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= 1e-3*math.Max(math.Abs(got), math.Abs(want))
}

func floatOf(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	case tensor.Float16:
		return float64(x.Float32())
	case tensor.BFloat16:
		return float64(x.Float32())
	}
	return math.NaN()
}

// outputElements reads OUTPUT0's JSON data leniently, flattened: numbers
// (json.Number), strings, booleans and null as the server wrote them, and
// the data's JSON text. The error says what came back instead.
func outputElements(e *Exchange) ([]any, string, error) {
	r, err := e.AsInferResponse()
	if err != nil {
		return nil, "", fmt.Errorf("a body that is not a JSON inference response: %s", clipped(string(e.Body), 200))
	}
	o := r.Output("OUTPUT0")
	if o == nil {
		return nil, "", fmt.Errorf("no OUTPUT0 (outputs %v)", r.Names())
	}
	raw, ok := o.Fields["data"]
	if !ok {
		return nil, "", fmt.Errorf("OUTPUT0 without data (as binary data? %s)", clipped(string(r.JSONPart), 200))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("OUTPUT0 data that is not JSON: %s", clipped(string(raw), 200))
	}
	var flat []any
	var walk func(any)
	walk = func(v any) {
		if a, ok := v.([]any); ok {
			for _, x := range a {
				walk(x)
			}
			return
		}
		flat = append(flat, v)
	}
	walk(v)
	return flat, string(raw), nil
}

// noteInexact records, for a JSON answer whose floats matched within
// tolerance, whether they also matched bit for bit after reading each
// decimal as the nearest value of the datatype (the catalog compares JSON
// floats with a tolerance, OIP-REST-DATA-008).
func noteInexact(req string, e *Exchange, want tensor.Tensor) {
	switch want.Datatype {
	case tensor.FP32, tensor.FP64, tensor.FP16, tensor.BF16:
	default:
		return
	}
	m := HaveOutputs(want)
	if ok, _ := m.Match(e); !ok {
		Note(req, "%s floats in JSON matched within tolerance but not bit for bit: %s", want.Datatype, clipped(m.FailureMessage(e), 300))
	}
}

// emptyAnswer grades the answer to a request with a 0-dimension tensor
// handling empty tensors is informational). A refusal is noted (a
// 5xx fails OIP-REST-ERR-003, and the body must be {"error": string}); an
// answer must carry the output (present) and it must be the empty tensor
// (equal).
func emptyAnswer(e *Exchange, want tensor.Tensor, equal, present string) {
	if !recordedAnswer(e, equal, fmt.Sprintf("a %s tensor of shape %v", want.Datatype, want.Shape)) {
		return
	}
	VerifyReq(present, e).To(PassCheck(func(r *InferResponse) error {
		if r.Output(want.Name) == nil {
			return fmt.Errorf("a %s tensor of shape %v was accepted but %s is missing (outputs %v)", want.Datatype, want.Shape, want.Name, r.Names())
		}
		return nil
	}))
	VerifyReq(equal, e).To(HaveOutputs(want))
}

// outOfRangeAnswer says how a success answer to an integer sent outside its
// datatype's range differs from the value sent, or "" when OUTPUT0 holds
// that value unchanged (identity's contract: the output is the input).
func outOfRangeAnswer(e *Exchange, sent *big.Int) string {
	got, raw, err := outputElements(e)
	switch {
	case err != nil:
		return err.Error()
	case len(got) != 1:
		return "OUTPUT0 " + clipped(raw, 80)
	}
	n, ok := got[0].(json.Number)
	if !ok {
		return fmt.Sprintf("%v", got[0])
	}
	f, _, err := big.ParseFloat(string(n), 10, 256, big.ToNearestEven)
	if err != nil || f.Cmp(new(big.Float).SetInt(sent)) != 0 {
		return string(n)
	}
	return ""
}
