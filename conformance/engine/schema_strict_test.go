package engine

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A body that does not parse is graded under the component's root
// requirement even where an ambiguity is tolerated (Unparsed); bare NaN and
// infinities, which Python's json reads, are a warning, anything
// else fails.
func TestCheckSchemaNotStrict(t *testing.T) {
	const head = `{"model_name":"m","outputs":[{"name":"O","datatype":"FP32","shape":[3],"data":`
	for _, c := range []struct {
		what, body string
		soft       string
	}{
		{"bare NaN", head + `[NaN,1,2]}]}`, "A-22"},
		{"bare infinities", head + `[Infinity,-Infinity,1]}]}`, "A-22"},
		{"a NaN after a string holding an escaped quote", head + `[NaN,1,2]}],"id":"a\"NaN"}`, "A-22"},
		{"bare NaN and a syntax error", head + `[NaN,1,2]}]}}`, ""},
		{"lower-case nan", head + `[nan,1,2]}]}`, ""},
		{"+Infinity", head + `[+Infinity,1,2]}]}`, ""},
		{"NaN glued to a name", head + `[NaNa,1,2]}]}`, ""},
		{"truncated", head + `[NaN,1`, ""},
		{"trailing data", okInfer + `{}`, ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			probs := CheckSchema(SchemaInferResponse, []byte(c.body))
			if len(probs) != 1 {
				t.Fatalf("problems %v, want one", probs)
			}
			p := probs[0]
			if p.Req != "OIP-REST-RESP-001" || !p.Unparsed || p.Soft != c.soft {
				t.Errorf("problem %+v, want OIP-REST-RESP-001, unparsed, soft %q", p, c.soft)
			}
		})
	}
	// NaN as a string is strict JSON (the convention MLServer and the
	// reference use): no problem at all.
	if probs := CheckSchema(SchemaInferResponse, []byte(head+`["NaN","Infinity","-Infinity"]}]}`)); len(probs) != 0 {
		t.Errorf("NaN as strings: problems %v, want none", probs)
	}
}

// finiteTokens leaves strict JSON as it is, with encoding/json as the
// oracle of what is strict.
func FuzzFiniteTokens(f *testing.F) {
	for _, s := range []string{`[NaN]`, `{"a":"NaN","b":[Infinity,-Infinity]}`, `"\"NaN\\"`, `[1e5,-0.5,"Infinity"]`, okInfer} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, found := finiteTokens(b)
		if json.Valid(b) && (found || !bytes.Equal(out, b)) {
			t.Errorf("finiteTokens(%q) = %q, %v; strict JSON must come back unchanged", b, out, found)
		}
	})
}
