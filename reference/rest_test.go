package reference_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
	"github.com/oipkit/oipkit/version"
)

func TestRESTHealth(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	var live, ready map[string]any
	wantJSON(t, get(t, base+"/v2/health/live"), http.StatusOK, &live)
	wantJSON(t, get(t, base+"/v2/health/ready"), http.StatusOK, &ready)
	if !reflect.DeepEqual(live, map[string]any{"live": true}) || !reflect.DeepEqual(ready, map[string]any{"ready": true}) {
		t.Fatalf("live %v, ready %v", live, ready)
	}
	// HEAD is answered like GET, without a body (Kubernetes probes may use it).
	if r := do(t, http.MethodHead, base+"/v2/health/live", nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("HEAD live: %d %q", r.status, r.body)
	}

	for _, path := range []string{"/v2/models/add_sub/ready", "/v2/models/versioned/versions/1/ready",
		"/v2/models/versioned/versions/2/ready", "/v2/models/versioned/ready", "/v2/models/identity_bf16/ready"} {
		var body struct {
			Name  string `json:"name"`
			Ready bool   `json:"ready"`
		}
		wantJSON(t, get(t, base+path), http.StatusOK, &body)
		if want := strings.Split(path, "/")[3]; body.Name != want || !body.Ready {
			t.Errorf("%s: %+v", path, body)
		}
	}
	wantError(t, get(t, base+"/v2/models/does_not_exist/ready"), http.StatusNotFound, "does_not_exist")
	wantError(t, get(t, base+"/v2/models/versioned/versions/99/ready"), http.StatusNotFound, "99")
	wantError(t, get(t, base+"/v2/models/Add_Sub/ready"), http.StatusNotFound) // names are case-sensitive
}

func TestRESTServerMetadata(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, path := range []string{"/v2", "/v2/"} {
		var md oip.ServerMetadata
		wantJSON(t, get(t, base+path), http.StatusOK, &md)
		if md.Name != "oipkit-reference" || md.Version != version.Version || !slices.Equal(md.Extensions, extNames()) {
			t.Fatalf("%s: %+v", path, md)
		}
	}
}

func TestRESTModelMetadata(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	var md oip.ModelMetadata
	wantJSON(t, get(t, base+"/v2/models/add_sub"), http.StatusOK, &md)
	want := oip.ModelMetadata{
		Name: "add_sub", Versions: []string{"1"}, Platform: "oipkit_native",
		Inputs: []oip.TensorMetadata{
			{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{-1, 16}},
			{Name: "INPUT1", Datatype: tensor.Int32, Shape: []int64{-1, 16}},
		},
		Outputs: []oip.TensorMetadata{
			{Name: "OUTPUT0", Datatype: tensor.Int32, Shape: []int64{-1, 16}},
			{Name: "OUTPUT1", Datatype: tensor.Int32, Shape: []int64{-1, 16}},
		},
	}
	if !reflect.DeepEqual(md, want) {
		t.Fatalf("add_sub metadata\n got %+v\nwant %+v", md, want)
	}
	for _, path := range []string{"/v2/models/versioned", "/v2/models/versioned/versions/1", "/v2/models/versioned/versions/2"} {
		var md oip.ModelMetadata
		wantJSON(t, get(t, base+path), http.StatusOK, &md)
		if md.Name != "versioned" || !slices.Equal(md.Versions, []string{"1", "2"}) {
			t.Errorf("%s: %+v", path, md)
		}
	}
	for _, d := range tensor.Datatypes {
		var md oip.ModelMetadata
		wantJSON(t, get(t, base+"/v2/models/identity_"+d.Lower()), http.StatusOK, &md)
		if len(md.Inputs) != 1 || md.Inputs[0].Datatype != d || !slices.Equal(md.Inputs[0].Shape, []int64{-1, -1}) {
			t.Errorf("identity_%s: %+v", d.Lower(), md)
		}
	}
	wantError(t, get(t, base+"/v2/models/does_not_exist"), http.StatusNotFound, "does_not_exist")
	wantError(t, get(t, base+"/v2/models/versioned/versions/99"), http.StatusNotFound, "99")
}

func TestRESTUnknownRoutes(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, path := range []string{"/", "/v1", "/v2/health", "/v2/health/live/x", "/v2/models", "/v2/models/",
		"/v2/models//ready", "/v2/models/add_sub/nope", "/v2/models/add_sub/versions", "/v2/models/add_sub/versions//ready",
		"/v2/models/add_sub/versions/1/nope", "/v2/models/add_sub/stats/x", "/v2/repository/nope", "/v2/repository/models/add_sub/x", "/metrics/x"} {
		wantError(t, get(t, base+path), http.StatusNotFound)
	}
}

func TestRESTMethodNotAllowed(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodPost, "/v2", "GET, HEAD"},
		{http.MethodPost, "/v2/health/live", "GET, HEAD"},
		{http.MethodDelete, "/v2/health/ready", "GET, HEAD"},
		{http.MethodPut, "/v2/models/add_sub", "GET, HEAD"},
		{http.MethodPost, "/v2/models/add_sub/ready", "GET, HEAD"},
		{http.MethodGet, "/v2/models/add_sub/infer", "POST"},
		{http.MethodPut, "/v2/models/add_sub/versions/1/infer", "POST"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
	} {
		r := do(t, c.method, base+c.path, nil)
		wantError(t, r, http.StatusMethodNotAllowed, c.method)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

func TestRESTInferAddSub(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, path := range []string{"/v2/models/add_sub/infer", "/v2/models/add_sub/versions/1/infer"} {
		r := post(t, base+path, addSubJSON)
		var resp struct {
			ModelName    string `json:"model_name"`
			ModelVersion string `json:"model_version"`
			Outputs      []struct {
				Name     string  `json:"name"`
				Datatype string  `json:"datatype"`
				Shape    []int64 `json:"shape"`
				Data     []int32 `json:"data"`
			} `json:"outputs"`
		}
		wantJSON(t, r, http.StatusOK, &resp)
		if resp.ModelName != "add_sub" || resp.ModelVersion != "1" || len(resp.Outputs) != 2 ||
			resp.Outputs[0].Name != "OUTPUT0" || resp.Outputs[1].Name != "OUTPUT1" {
			t.Fatalf("%s: %s", path, r.body)
		}
		for i := range 16 {
			if resp.Outputs[0].Data[i] != int32(i)+1 || resp.Outputs[1].Data[i] != int32(i)-1 {
				t.Fatalf("%s: %s", path, r.body)
			}
		}
	}

	// Nested data, an id, request/input/output parameters of every allowed
	// kind, and one requested output.
	nested := `{"id":"é-✓","parameters":{"a":"x","b":1,"c":1.5,"d":true},"inputs":[
	 {"name":"INPUT0","shape":[2,16],"datatype":"INT32","parameters":{},"data":[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]]},
	 {"name":"INPUT1","shape":[2,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}],
	 "outputs":[{"name":"OUTPUT1","parameters":{}}]}`
	r := post(t, base+"/v2/models/add_sub/infer", nested)
	resp, err := oip.DecodeRESTResponse(r.body, -1)
	if r.status != http.StatusOK || err != nil {
		t.Fatalf("%d %s %v", r.status, r.body, err)
	}
	if resp.ID != "é-✓" || len(resp.Outputs) != 1 || resp.Outputs[0].Name != "OUTPUT1" || !slices.Equal(resp.Outputs[0].Shape, []int64{2, 16}) {
		t.Fatalf("%s", r.body)
	}
}

func TestRESTInferOutputOrderFollowsRequest(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	req := addSubRequest()
	req.Outputs = []oip.RequestedOutput{{Name: "OUTPUT1"}, {Name: "OUTPUT0"}}
	resp, r := inferREST(t, base, req, oip.RESTEncoding{})
	if resp == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if len(resp.Outputs) != 2 || resp.Outputs[0].Name != "OUTPUT1" || resp.Outputs[1].Name != "OUTPUT0" {
		t.Fatalf("outputs %s", r.body)
	}
	checkAddSub(t, resp)
}

func TestRESTInferVersioned(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, c := range []struct{ version, ran string }{{"", "2"}, {"1", "1"}, {"2", "2"}} {
		req := &oip.InferRequest{Model: "versioned", Version: c.version, Inputs: []oip.InferInput{
			{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{3}, Data: []int32{0, 10, -5}}}}}
		resp, r := inferREST(t, base, req, oip.RESTEncoding{})
		if resp == nil {
			t.Fatalf("version %q: %d %s", c.version, r.status, r.body)
		}
		v := int32(c.ran[0] - '0')
		if resp.Version != c.ran || !reflect.DeepEqual(resp.Outputs[0].Data, []int32{v, 10 + v, -5 + v}) {
			t.Errorf("version %q: %s", c.version, r.body)
		}
	}
	r := post(t, base+"/v2/models/versioned/versions/99/infer", `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)
	wantError(t, r, http.StatusNotFound, "99")
	wantError(t, post(t, base+"/v2/models/does_not_exist/infer", addSubJSON), http.StatusNotFound, "does_not_exist")
}

// identitySample returns a [2,3] tensor of datatype d with varied elements.
func identitySample(d tensor.Datatype) tensor.Tensor {
	data := map[tensor.Datatype]any{
		tensor.Bool:   []bool{true, false, true, true, false, false},
		tensor.Uint8:  []uint8{0, 1, 2, 127, 128, 255},
		tensor.Uint16: []uint16{0, 1, 2, 3, 0x8000, 0xffff},
		tensor.Uint32: []uint32{0, 1, 2, 3, 1 << 31, 1<<32 - 1},
		tensor.Uint64: []uint64{0, 1, 1<<53 + 1, 3, 1 << 63, 1<<64 - 1},
		tensor.Int8:   []int8{-128, -1, 0, 1, 2, 127},
		tensor.Int16:  []int16{-32768, -1, 0, 1, 2, 32767},
		tensor.Int32:  []int32{-1 << 31, -1, 0, 1, 2, 1<<31 - 1},
		tensor.Int64:  []int64{-1 << 63, -1, 0, 1<<53 + 1, 2, 1<<63 - 1},
		tensor.FP16:   []tensor.Float16{0, 0x8000, 0x3c00, 0x7bff, 0x7c00, 0x0001},
		tensor.BF16:   []tensor.BFloat16{0, 0x8000, 0x3f80, 0x7f7f, 0x7f80, 0x0001},
		tensor.FP32:   []float32{0, -0.5, 0.1, -1.25, 3.4028235e38, 1e-45},
		tensor.FP64:   []float64{0, -0.5, 0.1, -1e300, 1.7976931348623157e308, 5e-324},
		tensor.Bytes:  [][]byte{[]byte("a"), {}, []byte("bcd"), []byte("é"), []byte("x y"), []byte(`"q"`)},
	}[d]
	return tensor.Tensor{Name: "INPUT0", Datatype: d, Shape: []int64{2, 3}, Data: data}
}

// TestRESTIdentityEveryDatatype round-trips every datatype through its
// identity model with JSON, binary inputs and binary outputs.
func TestRESTIdentityEveryDatatype(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, d := range tensor.Datatypes {
		for _, enc := range []oip.RESTEncoding{{}, {BinaryInputs: true, BinaryOutputs: true}, {BinaryInputs: true}, {BinaryOutputs: true}} {
			in := identitySample(d)
			req := &oip.InferRequest{Model: "identity_" + d.Lower(), ID: "x", Inputs: []oip.InferInput{{Tensor: in}}}
			resp, r := inferREST(t, base, req, enc)
			if resp == nil {
				t.Errorf("%s %+v: %d %s", d, enc, r.status, r.body)
				continue
			}
			out := resp.Outputs[0]
			if out.Name != "OUTPUT0" || out.Datatype != d || !slices.Equal(out.Shape, in.Shape) || !reflect.DeepEqual(out.Data, in.Data) {
				t.Errorf("%s %+v: got %s %s %v %v, want %v", d, enc, out.Name, out.Datatype, out.Shape, out.Data, in.Data)
			}
			binary := r.header.Get(oip.HeaderInferenceHeaderContentLength) != ""
			if binary != enc.BinaryOutputs {
				t.Errorf("%s %+v: binary response %v", d, enc, binary)
			}
			wantCT := "application/json"
			if enc.BinaryOutputs {
				wantCT = "application/octet-stream"
			}
			if ct := r.header.Get("Content-Type"); ct != wantCT {
				t.Errorf("%s %+v: Content-Type %q, want %q", d, enc, ct, wantCT)
			}
		}
	}
}

// TestRESTBinaryOutputSelection checks binary_data on one output overriding
// binary_data_output.
func TestRESTBinaryOutputSelection(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	req := addSubRequest()
	req.Parameters = oip.Parameters{oip.ParamBinaryDataOutput: true}
	req.Outputs = []oip.RequestedOutput{{Name: "OUTPUT0"}, {Name: "OUTPUT1", Parameters: oip.Parameters{oip.ParamBinaryData: false}}}
	resp, r := inferREST(t, base, req, oip.RESTEncoding{})
	if resp == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	checkAddSub(t, resp)
	header := r.body[:len(r.body)-64]
	if !strings.Contains(string(header), `"binary_data_size":64`) || strings.Count(string(header), `"data"`) != 1 {
		t.Fatalf("want OUTPUT0 binary and OUTPUT1 JSON: %s", header)
	}
}

// TestRESTValidationErrors sends requests that break add_sub's signature or
// the protocol; each must be a 400 with an error naming the culprit.
func TestRESTValidationErrors(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	const in0 = `{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}`
	const in1 = `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}`
	const fp32 = `{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}`
	cases := []struct {
		name, body string
		mentions   []string
	}{
		{"unknown input", `{"inputs":[` + in0 + `,` + in1 + `,{"name":"INPUT2","shape":[1],"datatype":"INT32","data":[1]}]}`, []string{"INPUT2"}},
		{"missing input", `{"inputs":[` + in0 + `]}`, []string{"INPUT1"}},
		{"duplicate input", `{"inputs":[` + in0 + `,` + in0 + `,` + in1 + `]}`, []string{"INPUT0", "duplicate"}},
		{"wrong datatype", `{"inputs":[` + fp32 + `,` + in1 + `]}`, []string{"INPUT0", "FP32"}},
		{"lower-case datatype", `{"inputs":[` + strings.Replace(in0, "INT32", "int32", 1) + `,` + in1 + `]}`, []string{"int32"}},
		{"unknown datatype", `{"inputs":[` + strings.Replace(in0, "INT32", "FLOAT32", 1) + `,` + in1 + `]}`, []string{"FLOAT32"}},
		{"wrong rank", `{"inputs":[` + strings.Replace(in0, "[1,16]", "[16]", 1) + `,` + in1 + `]}`, []string{"INPUT0", "rank"}},
		{"fixed dim mismatch", `{"inputs":[{"name":"INPUT0","shape":[1,15],"datatype":"INT32","data":[` + strings.Repeat("1,", 14) + `1]},` + in1 + `]}`, []string{"INPUT0", "[1 15]"}},
		{"variable dims disagree", `{"inputs":[` + in0 + `,{"name":"INPUT1","shape":[2,16],"datatype":"INT32","data":[` + strings.Repeat("1,", 31) + `1]}]}`, []string{"INPUT1"}},
		{"too few elements", `{"inputs":[` + strings.Replace(in0, ",15]", "]", 1) + `,` + in1 + `]}`, []string{"INPUT0"}},
		{"too many elements", `{"inputs":[` + strings.Replace(in0, ",15]", ",15,16]", 1) + `,` + in1 + `]}`, []string{"INPUT0"}},
		{"negative dim", `{"inputs":[` + strings.Replace(in0, "[1,16]", "[-1,16]", 1) + `,` + in1 + `]}`, []string{"INPUT0"}},
		{"unknown output", `{"inputs":[` + in0 + `,` + in1 + `],"outputs":[{"name":"NOPE"}]}`, []string{"NOPE"}},
		{"duplicate output", `{"inputs":[` + in0 + `,` + in1 + `],"outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT0"}]}`, []string{"OUTPUT0"}},
		{"output without name", `{"inputs":[` + in0 + `,` + in1 + `],"outputs":[{}]}`, nil},
		{"object parameter", `{"parameters":{"p":{"a":1}},"inputs":[` + in0 + `,` + in1 + `]}`, []string{"p"}},
		{"array parameter on input", `{"inputs":[` + strings.Replace(in0, `"data"`, `"parameters":{"q":[1]},"data"`, 1) + `,` + in1 + `]}`, []string{"q"}},
		{"null parameter on output", `{"inputs":[` + in0 + `,` + in1 + `],"outputs":[{"name":"OUTPUT0","parameters":{"r":null}}]}`, []string{"r"}},
		{"binary_data_output not a boolean", `{"parameters":{"binary_data_output":"yes"},"inputs":[` + in0 + `,` + in1 + `]}`, []string{"binary_data_output"}},
		{"binary_data not a boolean", `{"inputs":[` + in0 + `,` + in1 + `],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":1}}]}`, []string{"binary_data", "OUTPUT0"}},
		{"malformed JSON", `{"inputs": [`, nil},
		{"empty body", ``, nil},
		{"no inputs", `{}`, []string{"inputs"}},
		{"id is a number", `{"id":42,"inputs":[` + in0 + `,` + in1 + `]}`, []string{"id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, post(t, base+"/v2/models/add_sub/infer", c.body), http.StatusBadRequest, c.mentions...)
		})
	}
	t.Run("bad delay_ms", func(t *testing.T) {
		body := `{"parameters":{"delay_ms":"soon"},"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":[1]}]}`
		wantError(t, post(t, base+"/v2/models/delay/infer", body), http.StatusBadRequest, "delay_ms")
	})
}

func TestRESTHeaderLengthErrors(t *testing.T) {
	base := referencetest.Start(t).HTTPURL()
	for _, v := range []string{"abc", "-5", "1.5", "99999", "0x10", "0"} {
		r := post(t, base+"/v2/models/add_sub/infer", addSubJSON, oip.HeaderInferenceHeaderContentLength, v)
		wantError(t, r, http.StatusBadRequest, oip.HeaderInferenceHeaderContentLength, v)
	}
	// Binary input without the header: the body is read as JSON and fails.
	req := addSubRequest()
	body, _, err := oip.EncodeRESTRequest(req, oip.RESTEncoding{BinaryInputs: true})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, do(t, http.MethodPost, base+"/v2/models/add_sub/infer", body), http.StatusBadRequest)
}

func TestRESTBodyLimit(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxBodyBytes = 1024 })
	big := `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[` + strings.Repeat("0,", 1000) + `0]}]}`
	wantError(t, post(t, srv.HTTPURL()+"/v2/models/add_sub/infer", big), http.StatusRequestEntityTooLarge, "1024")
	// Under the limit still works.
	if r := post(t, srv.HTTPURL()+"/v2/models/add_sub/infer", addSubJSON); r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestRESTElementLimit(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxTensorElements = 8 })
	wantError(t, post(t, srv.HTTPURL()+"/v2/models/add_sub/infer", addSubJSON), http.StatusBadRequest, "INPUT0")
}
