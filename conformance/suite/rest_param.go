package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
)

// OIP-REST-PARAM: parameters objects over REST.

var _ = Describe("REST inference ids and parameters", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("accepts empty parameters at every level", Req("OIP-REST-PARAM-003", "OIP-REST-PARAM-001"), func(ctx SpecContext) {
		b, out0, _ := addSubRequest()
		b.JSON["parameters"] = Obj{}
		for _, in := range b.Inputs() {
			in["parameters"] = Obj{}
		}
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": Obj{}}}
		e := Post(ctx, "add_sub", "", b)
		VerifyReq("OIP-REST-PARAM-003", e).To(HaveOutputs(out0))
		// "$parameters is an object of zero or more name/value pairs"
		// (OIP-REST-PARAM-001, MUST): {} is a valid value wherever
		// parameters are allowed, and no unknown key excuses
		// refusing it.
		if e.Err == nil && e.Status != http.StatusOK {
			VerifyReq("OIP-REST-PARAM-001", e).To(HaveStatus(http.StatusOK), "empty parameters objects were refused")
		}
	})

	It("accepts string, integer and boolean parameter values", Req("OIP-REST-PARAM-001"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.JSON["parameters"] = Obj{"oipkit_s": "x", "oipkit_i": 1, "oipkit_b": true}
		e := Post(ctx, "add_sub", "", b)
		if !Answered(e) || e.Status == http.StatusOK {
			return
		}
		// rejecting unknown parameters is allowed, but only as a
		// proper error response (a 4xx with {"error": string}).
		if proper, _ := HaveErrorBody().Match(e); proper && e.Status < 500 {
			Verify(e).Soft("A-16").To(HaveStatus(http.StatusOK), "unknown parameters were rejected")
			return
		}
		Verify(e).To(HaveStatus(http.StatusOK), "want 200 (or an error response if unknown parameters are rejected)")
	})

	It("accepts string, integer, unsigned 64-bit, floating-point and boolean values at every level", Req("OIP-REST-PARAM-001", "OIP-REST-PARAM-003"), func(ctx SpecContext) {
		// $parameters values are "$string | $number | $boolean"
		// (OIP-REST): every kind a JSON number can be, at the request, on
		// each input and on each requested output. A-16: refusing unknown
		// parameters is allowed, as a proper error response, and warned.
		params := func() Obj {
			return Obj{"oipkit_s": "x é\u0000", "oipkit_i": int64(-(1 << 62)), "oipkit_u": uint64(math.MaxUint64),
				"oipkit_d": 1.5, "oipkit_e": -2.5e-300, "oipkit_b": false}
		}
		b, out0, out1 := addSubRequest()
		b.JSON["parameters"] = params()
		for _, in := range b.Inputs() {
			in["parameters"] = params()
		}
		b.JSON["outputs"] = []any{Obj{"name": "OUTPUT0", "parameters": params()}, Obj{"name": "OUTPUT1", "parameters": params()}}
		e := Post(ctx, "add_sub", "", b)
		if !Answered(e) {
			return
		}
		if e.Status == http.StatusOK {
			VerifyReq("OIP-REST-PARAM-001", e).To(HaveOutputs(out0, out1))
			VerifyReq("OIP-REST-PARAM-003", e).To(HaveOutputs(out0, out1))
			return
		}
		if proper, _ := HaveErrorBody().Match(e); proper && e.Status < 500 {
			VerifyReq("OIP-REST-PARAM-001", e).Soft("A-16").To(HaveStatus(http.StatusOK), "parameters of every kind were rejected")
			return
		}
		VerifyReq("OIP-REST-PARAM-001", e).To(HaveStatus(http.StatusOK), "want 200 (or an error response if unknown parameters are rejected)")
	})

	// Response parameters are allowed (OIP-REST-PARAM-003) and a server may
	// carry request parameters back; one it carries back must keep its type
	// and value. Leaving them out passes, and a refusal is PARAM-001's.
	It("carries request parameters of every type back unchanged, if at all", Req("OIP-REST-PARAM-004"), func(ctx SpecContext) {
		sent := map[string]string{ // name → the JSON sent
			"oipkit_echo_b": "true",
			"oipkit_echo_i": "9007199254740993", // 2^53+1: no float64 holds it
			"oipkit_echo_s": `"x é"`,
			"oipkit_echo_d": "0.25",
		}
		b, _, _ := addSubRequest()
		params := Obj{}
		for k, v := range sent {
			params[k] = json.RawMessage(v)
		}
		b.JSON["parameters"] = params
		e := Post(ctx, "add_sub", "", b)
		if !Answered(e) || e.Status != http.StatusOK {
			return
		}
		Verify(e).To(PassCheck(func(o *Object) error {
			var got map[string]json.RawMessage
			if json.Unmarshal(o.Members["parameters"], &got) != nil {
				return nil // absent, or a shape the schema grades
			}
			var list []error
			for _, k := range slices.Sorted(maps.Keys(sent)) {
				if g, ok := got[k]; ok && !sameJSONParam(sent[k], g) {
					list = append(list, fmt.Errorf("response parameter %q is %s, but the request sent %s", k, clipped(string(g), 80), sent[k]))
				}
			}
			return errors.Join(list...)
		}))
	})
})

// sameJSONParam reports whether two parameter values have the same JSON
// type and value; numbers compare exactly (2^53+1 is not 2^53).
func sameJSONParam(want string, got []byte) bool {
	decode := func(b []byte) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	w, _ := decode([]byte(want))
	g, ok := decode(got)
	if !ok {
		return false
	}
	if wn, isNum := w.(json.Number); isNum {
		gn, isNum := g.(json.Number)
		if !isNum {
			return false
		}
		a, okA := new(big.Rat).SetString(string(wn))
		b, okB := new(big.Rat).SetString(string(gn))
		return okA && okB && a.Cmp(b) == 0
	}
	return w == g
}
