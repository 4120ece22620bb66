package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-REST-MMETA: REST model metadata.

var _ = Describe("REST model metadata", Over(TransportREST), func() {
	// addSub fetches add_sub's metadata; ok is false when the answer is not
	// a 200 JSON object (recorded under the spec's requirement).
	addSub := func(ctx SpecContext) (*Exchange, bool) {
		NeedFixture("add_sub")
		e := Get(ctx, "/v2/models/add_sub")
		return e, Verify(e).To(HaveStatus(http.StatusOK)) && Verify(e).To(HaveJSONObjectBody())
	}

	It("answers GET /v2/models/{m} with 200 and a JSON object", Req("OIP-REST-MMETA-001"), func(ctx SpecContext) {
		addSub(ctx)
	})

	It("has name equal to the model and a string platform", Req("OIP-REST-MMETA-002"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		Verify(e).To(All(MatchSchema(), PassCheck(func(o *Object) error {
			if name, err := o.String("name"); err == nil && name != "add_sub" {
				return fmt.Errorf("name is %q, want \"add_sub\"", name)
			}
			return nil
		})))
	})

	It("lists versions as strings that can each be requested", Req("OIP-REST-MMETA-003"), func(ctx SpecContext) {
		NeedFixture("versioned")
		e := Get(ctx, "/v2/models/versioned")
		var vs []string
		Verify(e).To(PassCheck(func(o *Object) error {
			if raw, ok := o.Members["versions"]; ok {
				if err := json.Unmarshal(raw, &vs); err != nil {
					return fmt.Errorf("versions is %s, want an array of strings", clipped(string(raw), 120))
				}
			}
			return nil
		}))
		for _, v := range vs {
			Verify(Get(ctx, "/v2/models/versioned/versions/"+PathEscape(v))).To(HaveStatus(http.StatusOK))
		}
	})

	It("has inputs and outputs arrays", Req("OIP-REST-MMETA-004"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		// OIP-YAML does not require them; the markdown lists them.
		Verify(e).To(All(MatchSchema(), PassCheck(func(o *Object) error {
			var list []error
			for _, k := range []string{"inputs", "outputs"} {
				if _, ok := o.Members[k]; !ok {
					list = append(list, fmt.Errorf("%q is missing", k))
				}
			}
			return errors.Join(list...)
		})))
	})

	It("describes each tensor with name, datatype and shape matching the fixture", Req("OIP-REST-MMETA-005"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		// The types are the schema's; the values are the fixture's.
		Verify(e).To(All(MatchSchema(), PassCheck(func(o *Object) error {
			ins, _ := tensorMetadataList(o.Members, "inputs")
			outs, _ := tensorMetadataList(o.Members, "outputs")
			return errors.Join(wantTensors("inputs", ins, addSubMeta...), wantTensors("outputs", outs, addSubOutMeta...))
		})))
	})

	It("uses only catalog datatype names", Req("OIP-REST-MMETA-006"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		Verify(e).To(PassCheck(func(o *Object) error {
			var list []error
			for _, k := range []string{"inputs", "outputs"} {
				ts, _ := tensorMetadataList(o.Members, k)
				for _, t := range ts {
					if !tensor.Datatype(t.datatype).Valid() {
						list = append(list, fmt.Errorf("%s %q: datatype %q is not an OIP datatype", k, t.name, t.datatype))
					}
				}
			}
			return errors.Join(list...)
		}))
	})

	It("reports variable dimensions as -1 and no dimension below -1", Req("OIP-REST-MMETA-007"), func(ctx SpecContext) {
		NeedFixture("identity_fp32")
		Verify(Get(ctx, "/v2/models/identity_fp32")).To(PassCheck(func(o *Object) error {
			ins, err := tensorMetadataList(o.Members, "inputs")
			list := []error{err, wantTensors("inputs", ins, tensorMeta{"INPUT0", "FP32", []int64{-1, -1}})}
			for _, t := range ins {
				for _, d := range t.shape {
					if d < -1 {
						list = append(list, fmt.Errorf("input %q: dimension %d is below -1", t.name, d))
					}
				}
			}
			return errors.Join(list...)
		}))
	})

	It("sends properties, if any, as a string-to-string object", Req("OIP-REST-MMETA-008"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		Verify(e).To(PassCheck(func(o *Object) error {
			if raw, ok := o.Members["properties"]; ok {
				var p map[string]string
				if json.Unmarshal(raw, &p) != nil {
					return fmt.Errorf("properties is %s, want an object of strings", clipped(string(raw), 120))
				}
			}
			return nil
		}))
	})

	It("records the platform name", Req("OIP-REST-MMETA-009"), func(ctx SpecContext) {
		e, ok := addSub(ctx)
		if !ok {
			return
		}
		o, _ := e.AsObject()
		p, _ := o.String("platform")
		Note("OIP-REST-MMETA-009", "add_sub platform is %q", p)
	})

	It("answers GET /v2/models/{m}/versions/{v} with that model's metadata", Req("OIP-REST-MMETA-010"), func(ctx SpecContext) {
		NeedVersions()
		e := Get(ctx, "/v2/models/versioned/versions/1")
		if !Verify(e).To(HaveStatus(http.StatusOK)) {
			return
		}
		Verify(e).To(PassCheck(func(o *Object) error {
			var list []error
			if name, err := o.String("name"); err != nil || name != "versioned" {
				list = append(list, fmt.Errorf("name is %s, want \"versioned\"", o.Members["name"]))
			}
			if raw, ok := o.Members["versions"]; ok {
				var vs []string
				if json.Unmarshal(raw, &vs) != nil || !slices.Contains(vs, "1") {
					list = append(list, fmt.Errorf("versions is %s, want an array containing \"1\"", clipped(string(raw), 120)))
				}
			}
			return errors.Join(list...)
		}))
	})

	It("answers unversioned metadata of a versioned model with 200 or an error", Req("OIP-REST-MMETA-011"), func(ctx SpecContext) {
		NeedFixture("versioned")
		e := Get(ctx, "/v2/models/versioned")
		if !Answered(e) {
			return
		}
		Note("OIP-REST-MMETA-011", "GET /v2/models/versioned answered %d", e.Status)
		if e.Status != http.StatusOK {
			Verify(e).To(HaveErrorBody())
		}
	})

	It("answers metadata of an unknown model with an error status and {\"error\": string}", Req("OIP-REST-MMETA-012", "OIP-REST-ERR-002"), func(ctx SpecContext) {
		AfterNegative()
		e := Get(ctx, "/v2/models/does_not_exist")
		unknownModel(e, "OIP-REST-MMETA-012", "OIP-REST-ERR-002", "")
		if e.Err == nil && e.Status >= 400 {
			// MMETA-012 itself requires the {"error": string} body, not
			// only the general rule ERR-002.
			VerifyReq("OIP-REST-MMETA-012", e).To(HaveErrorBody())
		}
	})

	// On add_sub, not the versioned fixture (versions.go).
	It("answers metadata of versions add_sub does not have with an error", Req("OIP-REST-MMETA-013"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		AfterNegative()
		askVersionsREST(ctx, restVersionGrading{id: "OIP-REST-MMETA-013",
			refused: func(e *Exchange) { unknownModel(e, "", "", "") }},
			func(v string) *Exchange { return Get(ctx, "/v2/models/add_sub/versions/"+PathEscape(v)) })
	})
})
