package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/tensor"
)

// addSubRequest is the canonical add_sub JSON request (batch of one).
func addSubRequest() (restBody, tensor.Tensor, tensor.Tensor) {
	in0, in1 := addSubInputs(1)
	out0, out1 := addSubOutputs(in0, in1)
	return request(jsonInput(in0), jsonInput(in1)), out0, out1
}

var _ = Describe("REST inference", Over(TransportREST), func() {
	BeforeEach(func() { needFixture("add_sub") })

	It("answers a valid add_sub request with 200 and the sums and differences", Req("OIP-REST-INFER-001", "OIP-REST-INFER-023"), func(ctx SpecContext) {
		b, out0, out1 := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out0, out1)
		}
		grade(on("OIP-REST-INFER-001", e, err), on("OIP-REST-INFER-023", e, e.wantStatus(http.StatusOK)))
	})

	It("answers success with 200 and a JSON object body", Req("OIP-REST-RESP-001"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e := tgt.post(ctx, "add_sub", "", b)
		err := e.wantStatus(http.StatusOK)
		if err == nil {
			_, err = e.jsonObject()
		}
		grade(on("OIP-REST-RESP-001", e, err))
	})

	It("names the model in model_name", Req("OIP-REST-RESP-002"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			var name string
			if name, err = stringField(r.top, "model_name"); err == nil && name != "add_sub" {
				err = fmt.Errorf("model_name is %q, want \"add_sub\"", name)
			}
		}
		grade(on("OIP-REST-RESP-002", e, err))
	})

	It("sends outputs as an array of objects with name, datatype, shape and data", Req("OIP-REST-RESP-006"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = outputsSchema(r)
		}
		grade(on("OIP-REST-RESP-006", e, err))
	})

	It("sends concrete output shapes with no dimension below 0", Req("OIP-REST-RESP-007"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			for _, o := range r.outputs {
				for _, d := range o.shape {
					if d < 0 {
						err = errs(err, fmt.Errorf("output %q: shape %v has dimension %d", o.name, o.shape, d))
					}
				}
			}
		}
		grade(on("OIP-REST-RESP-007", e, err))
	})

	It("sends the output datatypes of the model metadata", Req("OIP-REST-RESP-008"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			for _, name := range []string{"OUTPUT0", "OUTPUT1"} {
				if o := r.output(name); o != nil && o.datatype != "INT32" {
					err = errs(err, fmt.Errorf("output %q: datatype %q, want \"INT32\"", name, o.datatype))
				}
			}
		}
		grade(on("OIP-REST-RESP-008", e, err))
	})

	It("sends prod(shape) data elements for every output", Req("OIP-REST-RESP-009"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			for _, o := range r.outputs {
				if o.binSize >= 0 || len(o.problems) > 0 {
					continue
				}
				if n, cerr := countJSON(o.fields["data"]); cerr != nil {
					err = errs(err, fmt.Errorf("output %q: data: %v", o.name, cerr))
				} else if want, _ := tensor.ElementCount(o.shape); int64(n) != want {
					err = errs(err, fmt.Errorf("output %q: %d data elements for shape %v, want %d", o.name, n, o.shape, want))
				}
			}
		}
		grade(on("OIP-REST-RESP-009", e, err))
	})

	It("serves a response without binary data as application/json", Req("OIP-REST-RESP-012"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e := tgt.post(ctx, "add_sub", "", b)
		err := e.wantStatus(http.StatusOK)
		if ct := e.header.Get("Content-Type"); err == nil && !isJSONContentType(ct) {
			err = fmt.Errorf("Content-Type %q, want application/json", ct)
		}
		grade(on("OIP-REST-RESP-012", e, err))
	})

	It("names outputs after the model's outputs", Req("OIP-REST-RESP-013"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			for _, n := range r.names() {
				if n != "OUTPUT0" && n != "OUTPUT1" {
					err = errs(err, fmt.Errorf("output %q is not an output of add_sub", n))
				}
			}
		}
		grade(on("OIP-REST-RESP-013", e, err))
	})

	It("returns every output when outputs is omitted", Req("OIP-REST-INFER-016"), func(ctx SpecContext) {
		b, out0, out1 := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out0, out1)
		}
		grade(on("OIP-REST-INFER-016", e, err))
	})

	It("returns a requested output", Req("OIP-REST-INFER-017"), func(ctx SpecContext) {
		b, _, out1 := addSubRequest()
		b.json["outputs"] = []any{obj{"name": "OUTPUT1"}}
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out1)
		}
		grade(on("OIP-REST-INFER-017", e, err))
	})

	It("leaves out outputs that were not requested", Req("OIP-REST-INFER-018"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.json["outputs"] = []any{obj{"name": "OUTPUT1"}}
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil && r.output("OUTPUT0") != nil {
			err = fmt.Errorf("OUTPUT0 was returned although only OUTPUT1 was requested")
		}
		grade(on("OIP-REST-INFER-018", e, err))
	})

	It("runs a batch of three rows and returns the whole batch", Req("OIP-REST-INFER-013", "OIP-REST-RESP-010"), func(ctx SpecContext) {
		in0, in1 := addSubInputs(3)
		out0, out1 := addSubOutputs(in0, in1)
		e, r, err := tgt.inferOK(ctx, "add_sub", "", request(jsonInput(in0), jsonInput(in1)))
		var shapeErr error
		if err == nil {
			err = r.expect(true, out0, out1)
			for _, o := range r.outputs {
				if len(o.shape) == 0 || o.shape[0] != 3 {
					shapeErr = errs(shapeErr, fmt.Errorf("output %q: shape %v, want [3 16]", o.name, o.shape))
				}
			}
		}
		grade(on("OIP-REST-INFER-013", e, err), on("OIP-REST-RESP-010", e, errs(err, shapeErr)))
	})
})

var _ = Describe("REST inference ids and parameters", Over(TransportREST), func() {
	BeforeEach(func() { needFixture("add_sub") })

	for _, tc := range []struct{ what, id string }{
		{"a plain id", "42"},
		{"a UTF-8 id", "é-✓"},
		{"a 1 KiB id", strings.Repeat("0123456789abcdef", 64)},
	} {
		It("echoes "+tc.what+" in the response", Req("OIP-REST-INFER-006", "OIP-REST-RESP-004"), func(ctx SpecContext) {
			b, _, _ := addSubRequest()
			b.json["id"] = tc.id
			e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
			if err == nil {
				var got string
				if got, err = stringField(r.top, "id"); err == nil && got != tc.id {
					err = fmt.Errorf("id is %q, want %q", clip(got, 80), clip(tc.id, 80))
				}
			}
			grade(on("OIP-REST-INFER-006", e, err), on("OIP-REST-RESP-004", e, err))
		})
	}

	It("answers a numeric id with an error or by coercing it, never a 5xx", Req("OIP-REST-INFER-007", "OIP-REST-ERR-001", "OIP-REST-ERR-003"), func(ctx SpecContext) {
		afterNegative()
		b, _, _ := addSubRequest()
		b.json["id"] = 42
		e := tgt.post(ctx, "add_sub", "", b)
		err := e.answered()
		var body error
		switch {
		case err != nil:
		case e.status >= 500:
			err = fmt.Errorf("%s, want 400 or 200 with id \"42\"", e.got())
		case e.status == http.StatusOK:
			note("OIP-REST-INFER-007", "a numeric id was accepted")
			if r, perr := parseInfer(e); perr == nil {
				if raw, ok := r.top["id"]; ok && string(raw) != `"42"` {
					err = fmt.Errorf("a numeric id 42 was accepted but echoed as %s, want \"42\"", clip(string(raw), 80))
				}
			}
		default:
			body = e.errorBody()
		}
		grade(on("OIP-REST-INFER-007", e, err), on("OIP-REST-ERR-001", e, body), serverFault(e))
	})

	It("accepts empty parameters on the request", Req("OIP-REST-INFER-008"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.json["parameters"] = obj{}
		e := tgt.post(ctx, "add_sub", "", b)
		grade(on("OIP-REST-INFER-008", e, e.wantStatus(http.StatusOK)))
	})

	It("accepts empty parameters on an input", Req("OIP-REST-INFER-015"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.json["inputs"].([]any)[0].(obj)["parameters"] = obj{}
		e := tgt.post(ctx, "add_sub", "", b)
		grade(on("OIP-REST-INFER-015", e, e.wantStatus(http.StatusOK)))
	})

	It("accepts empty parameters at every level", Req("OIP-REST-PARAM-003", "OIP-REST-PARAM-001"), func(ctx SpecContext) {
		b, out0, _ := addSubRequest()
		b.json["parameters"] = obj{}
		for _, in := range b.json["inputs"].([]any) {
			in.(obj)["parameters"] = obj{}
		}
		b.json["outputs"] = []any{obj{"name": "OUTPUT0", "parameters": obj{}}}
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if err == nil {
			err = r.expect(true, out0)
		}
		// "$parameters is an object of zero or more name/value pairs"
		// (OIP-REST-PARAM-001, MUST): {} is a valid value wherever
		// parameters are allowed, and no unknown key excuses
		// refusing it.
		var perr error
		if e.err == nil && e.status != http.StatusOK {
			perr = fmt.Errorf("empty parameters objects were refused: %s", e.got())
		}
		grade(on("OIP-REST-PARAM-003", e, err), on("OIP-REST-PARAM-001", e, perr))
	})

	It("accepts string, integer and boolean parameter values", Req("OIP-REST-PARAM-001"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		b.json["parameters"] = obj{"oipkit_s": "x", "oipkit_i": 1, "oipkit_b": true}
		e := tgt.post(ctx, "add_sub", "", b)
		var err error
		if err = e.answered(); err == nil && e.status != http.StatusOK {
			// rejecting unknown parameters is allowed, but only as a
			// proper error response.
			if berr := e.errorBody(); berr != nil || e.status >= 500 {
				err = fmt.Errorf("%s, want 200 (or an error response if unknown parameters are rejected)", e.got())
			} else {
				grade(softOn("OIP-REST-PARAM-001", "A-16", e, fmt.Errorf("unknown parameters were rejected: %s", e.got())))
				return
			}
		}
		grade(on("OIP-REST-PARAM-001", e, err))
	})

	It("sends response parameters, if any, as an object", Req("OIP-REST-RESP-005"), func(ctx SpecContext) {
		b, _, _ := addSubRequest()
		e, r, err := tgt.inferOK(ctx, "add_sub", "", b)
		if raw, ok := r.topField("parameters"); err == nil && ok {
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				err = fmt.Errorf("parameters is %s, want an object", clip(string(raw), 120))
			}
		}
		grade(on("OIP-REST-RESP-005", e, err))
	})
})

var _ = Describe("REST versioned inference", Over(TransportREST), func() {
	BeforeEach(func() { needFixture("versioned") })

	It("runs the version named in the path", Req("OIP-REST-INFER-002"), func(ctx SpecContext) {
		needVersions()
		var fs []finding
		for _, v := range []int32{1, 2} {
			ver := fmt.Sprint(v)
			e, r, err := tgt.inferOK(ctx, "versioned", ver, request(jsonInput(int32s("INPUT0", []int64{1}, 10))))
			if err == nil {
				err = r.expect(true, int32s("OUTPUT0", []int64{1}, 10+v))
				if raw, ok := r.top["model_version"]; ok {
					var got string
					if json.Unmarshal(raw, &got) != nil || (got != "" && got != ver) {
						err = errs(err, fmt.Errorf("model_version is %s, want %q", raw, ver))
					}
				}
			}
			fs = append(fs, on("OIP-REST-INFER-002", e, err))
		}
		grade(fs...)
	})

	It("reports the version that ran in model_version, if it sends one", Req("OIP-REST-RESP-003"), func(ctx SpecContext) {
		needVersions()
		e, r, err := tgt.inferOK(ctx, "versioned", "2", request(jsonInput(int32s("INPUT0", []int64{1}, 0))))
		// check the version only when one is sent (empty or null
		// means none).
		if raw, ok := r.topField("model_version"); err == nil && ok {
			var got string
			if json.Unmarshal(raw, &got) != nil || (got != "" && got != "2") {
				err = fmt.Errorf("model_version is %s, want \"2\"", raw)
			}
		}
		grade(on("OIP-REST-RESP-003", e, err))
	})

	It("runs a version of its choice or answers an error when no version is given", Req("OIP-REST-INFER-003"), func(ctx SpecContext) {
		e := tgt.post(ctx, "versioned", "", request(jsonInput(int32s("INPUT0", []int64{1}, 10))))
		err := e.answered()
		if err == nil && e.status == http.StatusOK {
			r, perr := parseInfer(e)
			if err = perr; err == nil {
				t, terr := r.tensor("OUTPUT0")
				if err = terr; err == nil {
					v, _ := t.Data.([]int32)
					if len(v) != 1 || (v[0] != 11 && v[0] != 12) {
						err = fmt.Errorf("OUTPUT0 is %v, want [11] (version 1) or [12] (version 2)", t.Data)
					} else {
						note("OIP-REST-INFER-003", "unversioned inference ran version %d", v[0]-10)
					}
				}
			}
		} else if err == nil {
			note("OIP-REST-INFER-003", "unversioned inference answered %d", e.status)
			err = e.errorBody()
		}
		grade(on("OIP-REST-INFER-003", e, err))
	})
})

// outputsSchema checks "outputs" and each output's required members
// (OIP-REST-RESP-006).
func outputsSchema(r *inferResult) error {
	raw, ok := r.top["outputs"]
	if !ok {
		return fmt.Errorf(`"outputs" is missing`)
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil || arr == nil {
		return fmt.Errorf(`"outputs" is %s, want an array`, clip(string(raw), 120))
	}
	if len(r.outputs) != len(arr) {
		return fmt.Errorf(`"outputs" has entries that are not objects: %s`, clip(string(raw), 200))
	}
	var list []error
	for _, o := range r.outputs {
		for _, p := range o.problems {
			list = append(list, fmt.Errorf("outputs[%d]: %s", o.index, p))
		}
		if d, ok := o.fields["data"]; ok && o.binSize < 0 && !strings.HasPrefix(strings.TrimSpace(string(d)), "[") {
			list = append(list, fmt.Errorf("outputs[%d]: data is %s, want an array", o.index, clip(string(d), 80)))
		}
	}
	return errs(list...)
}

// topField returns a top-level member of a parsed response; r may be nil.
func (r *inferResult) topField(key string) (json.RawMessage, bool) {
	if r == nil {
		return nil, false
	}
	v, ok := r.top[key]
	return v, ok
}

// countJSON counts the leaves of a (possibly nested) JSON array.
func countJSON(raw json.RawMessage) (int, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, err
	}
	arr, ok := v.([]any)
	if !ok {
		return 0, fmt.Errorf("%s is not an array", clip(string(raw), 80))
	}
	n := 0
	var walk func([]any)
	walk = func(a []any) {
		for _, e := range a {
			if sub, ok := e.([]any); ok {
				walk(sub)
			} else {
				n++
			}
		}
	}
	walk(arr)
	return n, nil
}
