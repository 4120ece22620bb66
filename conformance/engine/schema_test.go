package engine

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestSchemaFor(t *testing.T) {
	for path, want := range map[string]string{
		"GET /v2":                                       SchemaServerMetadata,
		"GET /v2/":                                      SchemaServerMetadata,
		"GET /v2/models/add_sub":                        SchemaModelMetadata,
		"GET /v2/models/versioned/versions/2":           SchemaModelMetadata,
		"POST /v2/models/add_sub/infer":                 SchemaInferResponse,
		"POST /v2/models/v/versions/1/infer":            SchemaInferResponse,
		"GET /v2/models/add_sub/ready":                  "",
		"GET /v2/models/add_sub/config":                 SchemaModelConfig,
		"GET /v2/health/live":                           "",
		"POST /v2/repository/models/m/load":             "",
		"GET /v2/models/add_sub/versions/1/ready":       "",
		"GET /v2/models/stats":                          SchemaStatistics,
		"GET /v2/models/add_sub/versions/1/stats":       SchemaStatistics,
		"GET /v2/systemsharedmemory/status":             SchemaSystemSHMStatus,
		"GET /v2/cudasharedmemory/region/r/status":      SchemaCUDASHMStatus,
		"POST /v2/systemsharedmemory/region/r/register": "",
		"POST /v2/systemsharedmemory/unregister":        "",
		"POST /v2/repository/index":                     SchemaRepositoryIndex,
		"GET /v2/logging":                               SchemaLogSettings,
		"POST /v2/logging":                              SchemaLogSettingsUpdate,
		"GET /v2/models/add_sub/trace/setting":          SchemaTraceSettings,
		"POST /v2/trace/setting":                        SchemaTraceUpdate,
		"POST /v2/models/text_gen/generate":             SchemaGenerateResponse,
		"POST /v2/models/text_gen/generate_stream":      "",
	} {
		method, p, _ := strings.Cut(path, " ")
		if got := SchemaFor(method, p); got != want {
			t.Errorf("SchemaFor(%s) = %q, want %q", path, got, want)
		}
	}
}

const okInfer = `{"model_name":"m","outputs":[{"name":"O","datatype":"INT32","shape":[1,2],"data":[1,2]}]}`

func TestCheckSchema(t *testing.T) {
	for _, c := range []struct {
		what, component, body string
		want                  []string // "REQ where: message fragment"; none means conforming
	}{
		{"a conforming response", SchemaInferResponse, okInfer, nil},
		{"extra members and nested data", SchemaInferResponse,
			`{"model_name":"m","x":{"y":null},"parameters":{"content_type":"np","headers":{"a":"b"}},"outputs":[{"name":"O","datatype":"INT32","shape":[2,1],"data":[[1],[2]],"extra":1}]}`, nil},
		{"a binary output without data", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}}]}`, nil},
		{"an output without data", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"INT32","shape":[1]}]}`,
			[]string{`OIP-REST-RESP-006 /outputs/0: has no "data"`}},
		{"OUTPUTS for outputs", SchemaInferResponse,
			`{"model_name":"m","OUTPUTS":[]}`, []string{`OIP-REST-RESP-006 : required member "outputs" is missing`}},
		{"Model_Name for model_name", SchemaInferResponse,
			`{"Model_Name":"m","outputs":[]}`, []string{`OIP-REST-RESP-002 : required member "model_name" is missing`}},
		{"a null id", SchemaInferResponse,
			`{"model_name":"m","id":null,"outputs":[]}`, []string{"OIP-REST-RESP-004 /id: is null, want string"}},
		{"a null model_version", SchemaInferResponse,
			`{"model_name":"m","model_version":null,"outputs":[]}`, []string{"OIP-REST-RESP-003 /model_version: is null, want string"}},
		{"null parameters", SchemaInferResponse,
			`{"model_name":"m","parameters":null,"outputs":[]}`, []string{"OIP-REST-RESP-005 /parameters: is null, want object"}},
		{"a null data element", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"FP32","shape":[2],"data":[1,null]}]}`,
			[]string{"OIP-REST-RESP-006 /outputs/0/data/1: is null, want an array, a number"}},
		{"a string shape", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"FP32","shape":["2"],"data":[1,2]}]}`,
			[]string{"OIP-REST-RESP-006 /outputs/0/shape/0: is a string, want integer"}},
		{"a duplicate model_name", SchemaInferResponse,
			`{"model_name":"m","outputs":[],"model_name":"n"}`, []string{`OIP-REST-RESP-002 : member "model_name" appears more than once`}},
		{"a duplicate member inside an output", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"INT32","shape":[1],"data":[1],"data":[2]}]}`,
			[]string{`OIP-REST-RESP-006 /outputs/0: member "data" appears more than once`}},
		{"a bare NaN", SchemaInferResponse,
			`{"model_name":"m","outputs":[{"name":"O","datatype":"FP32","shape":[1],"data":[NaN]}]}`,
			[]string{"OIP-REST-RESP-001 : body is not strict JSON"}},
		{"data after the object", SchemaInferResponse, okInfer + `{}`, []string{"OIP-REST-RESP-001 : body is not strict JSON"}},
		{"an array body", SchemaInferResponse, `[]`, []string{"OIP-REST-RESP-001 : is an array, want object"}},
		{"invalid UTF-8", SchemaInferResponse, "{\"model_name\":\"m\xff\",\"outputs\":[]}", []string{"OIP-REST-RESP-001 : body is not UTF-8"}},
		{"server metadata without extensions", SchemaServerMetadata, `{"name":"s","version":"1"}`,
			[]string{`OIP-REST-SMETA-002 : required member "extensions" is missing`}},
		{"server metadata with a null version", SchemaServerMetadata, `{"name":"s","version":null,"extensions":[]}`,
			[]string{"OIP-REST-SMETA-002 /version: is null, want string"}},
		{"model metadata with a bad tensor", SchemaModelMetadata,
			`{"name":"m","platform":"","inputs":[{"name":"I","datatype":"FP32","shape":[-1,1.5]}],"outputs":[{"name":"O","shape":[1]}]}`,
			[]string{"OIP-REST-MMETA-005 /inputs/0/shape/1: is a number, want integer", `OIP-REST-MMETA-005 /outputs/0: required member "datatype" is missing`}},
		{"model metadata without platform, inputs not an array", SchemaModelMetadata, `{"name":"m","inputs":{}}`,
			[]string{`OIP-REST-MMETA-002 : required member "platform" is missing`, "OIP-REST-MMETA-004 /inputs: is an object, want array"}},
		{"model metadata with a numeric version and property", SchemaModelMetadata,
			`{"name":"m","platform":"","versions":[1],"properties":{"a":1}}`,
			[]string{"OIP-REST-MMETA-008 /properties/a: is a number, want string", "OIP-REST-MMETA-003 /versions/0: is a number, want string"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			probs := CheckSchema(c.component, []byte(c.body))
			var got []string
			for _, p := range probs {
				got = append(got, p.Req+" "+p.String())
			}
			if len(c.want) == 0 && len(got) > 0 {
				t.Fatalf("problems %q, want none", got)
			}
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				req, frag, _ := strings.Cut(w, " ")
				where, msg, _ := strings.Cut(frag, ": ")
				p := probs[i]
				if p.Req != req || p.Where != where || !strings.Contains(p.Message, msg) {
					t.Errorf("problem %d is %s %q: %q, want %s %q: %q…", i, p.Req, p.Where, p.Message, req, where, msg)
				}
			}
		})
	}
}

func TestCheckSchemaDepthBounded(t *testing.T) {
	body := `{"model_name":"m","outputs":[{"name":"O","datatype":"FP32","shape":[1],"data":` +
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}]}`
	probs := CheckSchema(SchemaInferResponse, []byte(body))
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "nested deeper") {
		t.Errorf("problems %v, want one about nesting", probs)
	}
}

// An output the request put in a shared-memory region may come back
// without data and without parameters (Triton does); any other output
// without data is still a schema problem.
func TestSchemaSharedMemoryOutputs(t *testing.T) {
	resp := `{"model_name":"add_sub","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16]},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16]}]}`
	for _, c := range []struct {
		req  string
		want []string
	}{
		{`{"inputs":[],"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"r","shared_memory_byte_size":64}},{"name":"OUTPUT1"}]}`, []string{"/outputs/1"}},
		{`{"inputs":[]}`, []string{"/outputs/0", "/outputs/1"}},
	} {
		e := &Exchange{Method: "POST", Path: "/v2/models/add_sub/infer", ReqBody: []byte(c.req), Status: 200,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(resp)}
		var got []string
		for _, p := range e.schemaProblems() {
			got = append(got, p.Where)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("request %s: problems at %q, want %q", c.req, got, c.want)
		}
	}
}
