package suite

import (
	"math"
	"net/http"

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
})
