package suite

import (
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
)

// OIP-REST-RESP: the REST inference response.

var _ = Describe("REST inference", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	It("answers success with 200 and a JSON object body", Req("OIP-REST-RESP-001"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e := Post(ctx, "add_sub", "", b)
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Verify(e).To(HaveJSONObjectBody())
		}
	})

	It("names the model in model_name", Req("OIP-REST-RESP-002"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveModelName("add_sub"))
	})

	It("sends outputs as an array of objects with name, datatype, shape and data", Req("OIP-REST-RESP-006"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(MatchSchema())
	})

	It("sends concrete output shapes with no dimension below 0", Req("OIP-REST-RESP-007"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveConcreteShapes())
	})

	It("sends the output datatypes of the model metadata", Req("OIP-REST-RESP-008"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOutputDatatype("INT32", "OUTPUT0", "OUTPUT1"))
	})

	It("sends prod(shape) data elements for every output", Req("OIP-REST-RESP-009"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveDataCounts())
	})

	It("serves a response without binary data as application/json", Req("OIP-REST-RESP-012"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e := Post(ctx, "add_sub", "", b)
		if Verify(e).To(HaveStatus(http.StatusOK)) {
			Verify(e).To(HaveContentType("application/json"))
		}
	})

	It("names outputs after the model's outputs", Req("OIP-REST-RESP-013"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(HaveOnlyOutputs("OUTPUT0", "OUTPUT1"))
	})
})

var _ = Describe("REST inference ids and parameters", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("add_sub") })

	// The one REST spec whose subject is a request without an id (the id is
	// optional): every other request carries one (RequestID).
	It("answers a request without an id, and records the id it returns", Req("OIP-REST-RESP-004", "OIP-REST-INFER-001"), func(ctx SpecContext) {
		b, out0, out1 := addSubRequest()
		delete(b.JSON, "id")
		e := Post(ctx, "add_sub", "", b)
		VerifyReq("OIP-REST-INFER-001", e).To(HaveOutputs(out0, out1))
		// the id may then be absent or any string; the schema check
		// of the body grades a null.
		if r, err := e.AsInferResponse(); err == nil {
			if raw, ok := r.Top["id"]; ok && string(raw) != `""` {
				Note("OIP-REST-RESP-004", "a request without an id was answered with id %s", clipped(string(raw), 80))
			}
		}
	})

	It("sends response parameters, if any, as an object", Req("OIP-REST-RESP-005"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		Verify(Post(ctx, "add_sub", "", b)).To(PassCheck(func(r *InferResponse) error {
			if raw, ok := r.Top["parameters"]; ok {
				var m map[string]json.RawMessage
				if json.Unmarshal(raw, &m) != nil {
					return fmt.Errorf("parameters is %s, want an object", clipped(string(raw), 120))
				}
			}
			return nil
		}))
	})
})

var _ = Describe("REST versioned inference", Over(TransportREST), func() {
	BeforeEach(func() { NeedFixture("versioned") })

	It("reports the version that ran in model_version, if it sends one", Req("OIP-REST-RESP-003"), func(ctx SpecContext) {
		NeedVersions()
		e := Post(ctx, "versioned", "2", Request(JSONInput(int32s("INPUT0", []int64{1}, 0))))
		// check the version only when one is sent (empty or null
		// means none).
		Verify(e).To(PassCheck(func(r *InferResponse) error {
			if raw, ok := r.Top["model_version"]; ok {
				var got string
				if json.Unmarshal(raw, &got) != nil || (got != "" && got != "2") {
					return fmt.Errorf("model_version is %s, want \"2\"", raw)
				}
			}
			return nil
		}))
	})
})
