package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	"github.com/oipkit/oipkit/tensor"
)

// serverMetadataSchema checks name, version and extensions (OIP-REST-SMETA-002).
func serverMetadataSchema(m map[string]json.RawMessage) error {
	var list []error
	for _, k := range []string{"name", "version"} {
		if _, err := stringField(m, k); err != nil {
			list = append(list, err)
		}
	}
	_, err := extensionsField(m)
	return errs(append(list, err)...)
}

func extensionsField(m map[string]json.RawMessage) ([]string, error) {
	raw, ok := m["extensions"]
	if !ok {
		return nil, fmt.Errorf(`"extensions" is missing (an empty array is allowed)`)
	}
	var exts []string
	if err := json.Unmarshal(raw, &exts); err != nil || exts == nil {
		return nil, fmt.Errorf(`"extensions" is %s, want an array of strings`, clip(string(raw), 120))
	}
	return exts, nil
}

// tensorMetadataList checks one "inputs"/"outputs" list (OIP-REST-MMETA-005)
// and returns it.
func tensorMetadataList(m map[string]json.RawMessage, key string) ([]tensorMeta, error) {
	raw, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("%q is missing", key)
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fmt.Errorf("%q is %s, want an array of tensor metadata", key, clip(string(raw), 120))
	}
	var out []tensorMeta
	var list []error
	for i, it := range items {
		var tm tensorMeta
		var err error
		if tm.name, err = stringField(it, "name"); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		if tm.datatype, err = stringField(it, "datatype"); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		if s, ok := it["shape"]; !ok {
			list = append(list, fmt.Errorf("%s[%d]: \"shape\" is missing", key, i))
		} else if tm.shape, err = shapeField(s); err != nil {
			list = append(list, fmt.Errorf("%s[%d]: %v", key, i, err))
		}
		out = append(out, tm)
	}
	return out, errs(list...)
}

type tensorMeta struct {
	name, datatype string
	shape          []int64
}

// wantTensors compares metadata tensors with the fixture contract by name.
func wantTensors(key string, got []tensorMeta, want ...tensorMeta) error {
	var list []error
	for _, w := range want {
		i := slices.IndexFunc(got, func(t tensorMeta) bool { return t.name == w.name })
		if i < 0 {
			list = append(list, fmt.Errorf("%s: %q is missing", key, w.name))
			continue
		}
		g := got[i]
		if g.datatype != w.datatype {
			list = append(list, fmt.Errorf("%s %q: datatype %q, want %q", key, w.name, g.datatype, w.datatype))
		}
		if !slices.Equal(g.shape, w.shape) {
			list = append(list, fmt.Errorf("%s %q: shape %v, want %v", key, w.name, g.shape, w.shape))
		}
	}
	return errs(list...)
}

var addSubMeta = []tensorMeta{
	{"INPUT0", "INT32", []int64{-1, 16}}, {"INPUT1", "INT32", []int64{-1, 16}},
}
var addSubOutMeta = []tensorMeta{
	{"OUTPUT0", "INT32", []int64{-1, 16}}, {"OUTPUT1", "INT32", []int64{-1, 16}},
}

var _ = Describe("REST server metadata", Over(TransportREST), func() {
	It("answers GET /v2 with 200 and a JSON object", Req("OIP-REST-SMETA-001"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		err := e.wantStatus(http.StatusOK)
		if err == nil {
			_, err = e.jsonObject()
		}
		grade(on("OIP-REST-SMETA-001", e, err))
	})

	// A healthy server cannot be made to fail GET /v2, so this check is
	// opportunistic: whenever server metadata fails, the answer must carry
	// an error status and the {"error": string} body. It fails a server whose
	// /v2 breaks with, say, a 503 and an HTML page.
	It("answers a failed server-metadata request with an error status and an {\"error\": string} body", Req("OIP-REST-SMETA-005"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		var err error
		switch {
		case e.answered() != nil:
			err = e.answered()
		case e.status >= 200 && e.status < 300:
			note("OIP-REST-SMETA-005", "GET /v2 succeeded (%d); the error form was not observed", e.status)
		case e.status < 400:
			err = fmt.Errorf("GET /v2: %s, want 200 or an error status (>= 400) with {\"error\": string}", e.got())
		default:
			err = e.errorBody()
		}
		grade(on("OIP-REST-SMETA-005", e, err))
	})

	It("has a string name, a string version and an array of string extensions", Req("OIP-REST-SMETA-002"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		m, err := e.jsonObject()
		if err == nil {
			err = serverMetadataSchema(m)
		}
		grade(on("OIP-REST-SMETA-002", e, err))
	})

	It("has a non-empty name and version", Req("OIP-REST-SMETA-003"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		m, err := e.jsonObject()
		if err == nil {
			for _, k := range []string{"name", "version"} {
				if s, ferr := stringField(m, k); ferr == nil && s == "" {
					err = errs(err, fmt.Errorf("%q is empty", k))
				}
			}
		}
		grade(on("OIP-REST-SMETA-003", e, err))
	})

	It("lists each extension at most once", Req("OIP-REST-SMETA-004"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		m, err := e.jsonObject()
		var exts []string
		if err == nil {
			exts, err = extensionsField(m)
		}
		if err == nil {
			for i, x := range exts {
				if slices.Contains(exts[:i], x) {
					err = errs(err, fmt.Errorf("extension %q is listed twice in %q", x, exts))
				}
			}
		}
		grade(on("OIP-REST-SMETA-004", e, err))
	})

	It("has an extensions array, possibly empty", Req("OIP-GEN-004"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		m, err := e.jsonObject()
		if err == nil {
			_, err = extensionsField(m)
		}
		grade(on("OIP-GEN-004", e, err))
	})

	It("serves server metadata as application/json", Req("OIP-REST-SMETA-006"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2")
		err := e.wantStatus(http.StatusOK)
		if ct := e.header.Get("Content-Type"); err == nil && !isJSONContentType(ct) {
			err = fmt.Errorf("GET /v2: Content-Type %q, want application/json", ct)
		}
		grade(on("OIP-REST-SMETA-006", e, err))
	})

	It("records how GET /v2/ with a trailing slash is answered", Req("OIP-REST-SMETA-007"), func(ctx SpecContext) {
		e := tgt.get(ctx, "/v2/")
		err := e.answered()
		if err == nil {
			note("OIP-REST-SMETA-007", "GET /v2/ answered %d", e.status)
			if e.status >= 500 {
				err = fmt.Errorf("GET /v2/: %s, want 200 or a 4xx", e.got())
			}
		}
		grade(on("OIP-REST-SMETA-007", e, err))
	})
})

var _ = Describe("REST model metadata", Over(TransportREST), func() {
	addSub := func(ctx SpecContext) (*exchange, map[string]json.RawMessage, error) {
		needFixture("add_sub")
		e := tgt.get(ctx, "/v2/models/add_sub")
		if err := e.wantStatus(http.StatusOK); err != nil {
			return e, nil, err
		}
		m, err := e.jsonObject()
		return e, m, err
	}

	It("answers GET /v2/models/{m} with 200 and a JSON object", Req("OIP-REST-MMETA-001"), func(ctx SpecContext) {
		e, _, err := addSub(ctx)
		grade(on("OIP-REST-MMETA-001", e, err))
	})

	It("has name equal to the model and a string platform", Req("OIP-REST-MMETA-002"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if err == nil {
			name, nerr := stringField(m, "name")
			if nerr == nil && name != "add_sub" {
				nerr = fmt.Errorf("name is %q, want \"add_sub\"", name)
			}
			_, perr := stringField(m, "platform")
			err = errs(nerr, perr)
		}
		grade(on("OIP-REST-MMETA-002", e, err))
	})

	It("lists versions as strings that can each be requested", Req("OIP-REST-MMETA-003"), func(ctx SpecContext) {
		needFixture("versioned")
		e := tgt.get(ctx, "/v2/models/versioned")
		m, err := e.jsonObject()
		fs := []finding{}
		if err == nil {
			if raw, ok := m["versions"]; ok {
				var vs []string
				if jerr := json.Unmarshal(raw, &vs); jerr != nil {
					err = fmt.Errorf("versions is %s, want an array of strings", clip(string(raw), 120))
				}
				for _, v := range vs {
					ve := tgt.get(ctx, "/v2/models/versioned/versions/"+pathEscape(v))
					fs = append(fs, on("OIP-REST-MMETA-003", ve, ve.wantStatus(http.StatusOK)))
				}
			}
		}
		grade(append(fs, on("OIP-REST-MMETA-003", e, err))...)
	})

	It("has inputs and outputs arrays", Req("OIP-REST-MMETA-004"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if err == nil {
			for _, k := range []string{"inputs", "outputs"} {
				var arr []json.RawMessage
				if jerr := json.Unmarshal(m[k], &arr); jerr != nil || arr == nil {
					err = errs(err, fmt.Errorf("%q is %s, want an array", k, clip(string(m[k]), 80)))
				}
			}
		}
		grade(on("OIP-REST-MMETA-004", e, err))
	})

	It("describes each tensor with name, datatype and shape matching the fixture", Req("OIP-REST-MMETA-005"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if err == nil {
			ins, ierr := tensorMetadataList(m, "inputs")
			outs, oerr := tensorMetadataList(m, "outputs")
			err = errs(ierr, oerr, wantTensors("inputs", ins, addSubMeta...), wantTensors("outputs", outs, addSubOutMeta...))
		}
		grade(on("OIP-REST-MMETA-005", e, err))
	})

	It("uses only catalog datatype names", Req("OIP-REST-MMETA-006"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if err == nil {
			for _, k := range []string{"inputs", "outputs"} {
				ts, _ := tensorMetadataList(m, k)
				for _, t := range ts {
					if !tensor.Datatype(t.datatype).Valid() {
						err = errs(err, fmt.Errorf("%s %q: datatype %q is not an OIP datatype", k, t.name, t.datatype))
					}
				}
			}
		}
		grade(on("OIP-REST-MMETA-006", e, err))
	})

	It("reports variable dimensions as -1 and no dimension below -1", Req("OIP-REST-MMETA-007"), func(ctx SpecContext) {
		needFixture("identity_fp32")
		e := tgt.get(ctx, "/v2/models/identity_fp32")
		m, err := e.jsonObject()
		if err == nil {
			ins, ierr := tensorMetadataList(m, "inputs")
			err = errs(ierr, wantTensors("inputs", ins, tensorMeta{"INPUT0", "FP32", []int64{-1, -1}}))
			for _, t := range ins {
				for _, d := range t.shape {
					if d < -1 {
						err = errs(err, fmt.Errorf("input %q: dimension %d is below -1", t.name, d))
					}
				}
			}
		}
		grade(on("OIP-REST-MMETA-007", e, err))
	})

	It("sends properties, if any, as a string-to-string object", Req("OIP-REST-MMETA-008"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if raw, ok := m["properties"]; err == nil && ok {
			var p map[string]string
			if json.Unmarshal(raw, &p) != nil {
				err = fmt.Errorf("properties is %s, want an object of strings", clip(string(raw), 120))
			}
		}
		grade(on("OIP-REST-MMETA-008", e, err))
	})

	It("records the platform name", Req("OIP-REST-MMETA-009"), func(ctx SpecContext) {
		e, m, err := addSub(ctx)
		if err == nil {
			p, _ := stringField(m, "platform")
			note("OIP-REST-MMETA-009", "add_sub platform is %q", p)
		}
		grade(on("OIP-REST-MMETA-009", e, err))
	})

	It("answers GET /v2/models/{m}/versions/{v} with that model's metadata", Req("OIP-REST-MMETA-010"), func(ctx SpecContext) {
		needVersions()
		e := tgt.get(ctx, "/v2/models/versioned/versions/1")
		err := e.wantStatus(http.StatusOK)
		if err == nil {
			m, jerr := e.jsonObject()
			err = jerr
			if err == nil {
				if name, nerr := stringField(m, "name"); nerr != nil || name != "versioned" {
					err = fmt.Errorf("name is %s, want \"versioned\"", m["name"])
				}
				if raw, ok := m["versions"]; ok {
					var vs []string
					if json.Unmarshal(raw, &vs) != nil || !slices.Contains(vs, "1") {
						err = errs(err, fmt.Errorf("versions is %s, want an array containing \"1\"", clip(string(raw), 120)))
					}
				}
			}
		}
		grade(on("OIP-REST-MMETA-010", e, err))
	})

	It("answers unversioned metadata of a versioned model with 200 or an error", Req("OIP-REST-MMETA-011"), func(ctx SpecContext) {
		needFixture("versioned")
		e := tgt.get(ctx, "/v2/models/versioned")
		err := e.answered()
		if err == nil {
			note("OIP-REST-MMETA-011", "GET /v2/models/versioned answered %d", e.status)
			if e.status != http.StatusOK {
				err = e.errorBody()
			}
		}
		grade(on("OIP-REST-MMETA-011", e, err))
	})

	It("answers metadata of an unknown model with an error status and {\"error\": string}", Req("OIP-REST-MMETA-012", "OIP-REST-ERR-002"), func(ctx SpecContext) {
		afterNegative()
		e := tgt.get(ctx, "/v2/models/does_not_exist")
		fs := unknownModel(e, "OIP-REST-MMETA-012", "OIP-REST-ERR-002")
		if e.err == nil && e.status >= 400 {
			// MMETA-012 itself requires the {"error": string} body, not
			// only the general rule ERR-002.
			fs = append(fs, on("OIP-REST-MMETA-012", e, e.errorBody()))
		}
		grade(fs...)
	})

	It("answers metadata of an unknown version with an error", Req("OIP-REST-MMETA-013"), func(ctx SpecContext) {
		needVersions()
		afterNegative()
		e := tgt.get(ctx, "/v2/models/versioned/versions/99")
		grade(unknownModel(e, "OIP-REST-MMETA-013", "OIP-REST-MMETA-013")...)
	})
})

// unknownModel grades the answer for an unknown model or version: an error
// status with the error body; 400 and 404 both pass.
func unknownModel(e *exchange, req, bodyReq string) []finding {
	if err := e.answered(); err != nil {
		return []finding{on("", e, err)}
	}
	var fs []finding
	switch {
	case e.status < 400:
		return []finding{on(req, e, fmt.Errorf("%s %s: %s, want 400 or 404 with {\"error\": string}", e.method, e.path, e.got()))}
	case e.status >= 500:
		fs = append(fs, on(req, e, fmt.Errorf("%s %s: %s, want 400 or 404", e.method, e.path, e.got())))
	case e.status != 400 && e.status != 404:
		fs = append(fs, softOn(req, "A-03", e, fmt.Errorf("%s %s: got %d, want 400 or 404", e.method, e.path, e.status)))
	}
	return append(fs, on(bodyReq, e, e.errorBody()))
}
