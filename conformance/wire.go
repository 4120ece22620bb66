package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// This file reads and writes REST bodies at the byte level. Requests are
// built by hand so that a spec controls every field (and can break any of
// them); responses are checked from the raw body, because the requirements
// are about the wire, not about what a lenient decoder would accept.

// obj is a JSON object under construction.
type obj = map[string]any

// restBody is a REST inference request: its JSON object and the binary
// buffers that follow it, in input order.
type restBody struct {
	json obj
	bin  [][]byte
}

// jsonInput is the REST JSON form of an input tensor, flat data.
func jsonInput(t tensor.Tensor) obj {
	return obj{"name": t.Name, "datatype": string(t.Datatype), "shape": t.Shape, "data": jsonValues(t)}
}

// request is a REST request with the given inputs and no other fields.
func request(inputs ...obj) restBody {
	list := make([]any, len(inputs))
	for i, in := range inputs {
		list[i] = in
	}
	return restBody{json: obj{"inputs": list}}
}

// binaryInput adds t as a binary input (binary_data_size, no data) to b.
func (b *restBody) binaryInput(t tensor.Tensor) error {
	raw, err := tensor.EncodeRaw(t)
	if err != nil {
		return err
	}
	in := obj{"name": t.Name, "datatype": string(t.Datatype), "shape": t.Shape,
		"parameters": obj{oip.ParamBinaryDataSize: len(raw)}}
	b.json["inputs"] = append(b.json["inputs"].([]any), in)
	b.bin = append(b.bin, raw)
	return nil
}

// encode returns the body and, when it carries binary data, the JSON length
// for Inference-Header-Content-Length (-1 otherwise).
func (b restBody) encode() ([]byte, int) {
	js, err := json.Marshal(b.json)
	if err != nil {
		panic(fmt.Sprintf("conformance: marshal request: %v", err)) // our own literal values only
	}
	if len(b.bin) == 0 {
		return js, -1
	}
	out := append([]byte(nil), js...)
	for _, r := range b.bin {
		out = append(out, r...)
	}
	return out, len(js)
}

// post sends a REST inference request to model (and version, if not "").
func (t *target) post(ctx context.Context, model, version string, b restBody) *exchange {
	body, hl := b.encode()
	h := http.Header{"Content-Type": {"application/json"}}
	if hl >= 0 {
		h.Set("Content-Type", "application/octet-stream")
		h.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	}
	return t.do(ctx, http.MethodPost, inferPath(model, version), h, body)
}

// postRaw sends body bytes as they are.
func (t *target) postRaw(ctx context.Context, model string, h http.Header, body []byte) *exchange {
	if h == nil {
		h = http.Header{"Content-Type": {"application/json"}}
	}
	return t.do(ctx, http.MethodPost, inferPath(model, ""), h, body)
}

func (t *target) get(ctx context.Context, path string) *exchange {
	return t.do(ctx, http.MethodGet, path, nil, nil)
}

func inferPath(model, version string) string {
	if version != "" {
		return "/v2/models/" + pathEscape(model) + "/versions/" + pathEscape(version) + "/infer"
	}
	return "/v2/models/" + pathEscape(model) + "/infer"
}

// ----- responses -----

// decodeObject parses a JSON object keeping numbers exact.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %v", err)
	}
	if m == nil {
		return nil, fmt.Errorf("body is JSON null, want an object")
	}
	if dec.More() {
		return nil, fmt.Errorf("body has data after the JSON object")
	}
	return m, nil
}

// jsonObject checks that the answer's body is a JSON object.
func (e *exchange) jsonObject() (map[string]json.RawMessage, error) {
	if err := e.answered(); err != nil {
		return nil, err
	}
	m, err := decodeObject(e.body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v (%s)", e.method, e.path, err, e.got())
	}
	return m, nil
}

// stringField returns a required string member.
func stringField(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", fmt.Errorf("%q is missing", key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q is %s, want a string", key, clip(string(raw), 80))
	}
	return s, nil
}

// shapeField parses a shape: an array of integers.
func shapeField(raw json.RawMessage) ([]int64, error) {
	var dims []json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&dims); err != nil || dims == nil {
		return nil, fmt.Errorf("shape is %s, want an array of integers", clip(string(raw), 80))
	}
	out := make([]int64, len(dims))
	for i, d := range dims {
		n, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("shape %s: dimension %d (%s) is not an integer", clip(string(raw), 80), i, d)
		}
		out[i] = n
	}
	return out, nil
}

// isJSONContentType reports whether a Content-Type is application/json.
func isJSONContentType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// errorBody checks the REST error form {"error": string} (catalog
// OIP-REST-ERR-001/002, ERR-006: error is required).
func (e *exchange) errorBody() error {
	if err := e.answered(); err != nil {
		return err
	}
	m, err := decodeObject(e.body)
	if err != nil {
		return fmt.Errorf("error body: %v; %s, want {\"error\": string}", err, e.got())
	}
	if _, err := stringField(m, "error"); err != nil {
		return fmt.Errorf("error body: %v; %s, want {\"error\": string}", err, e.got())
	}
	return nil
}

// rejection grades the answer to a request the server must refuse. req is
// the requirement the request violates, bodyReq the one requiring the
// {"error": string} body. The spec must carry the labels bodyReq and
// OIP-REST-ERR-003.
//
// The catalog's "error response" is any status >= 400 with that body (§2
// preamble), so a 5xx satisfies req itself; the 5xx is judged once, under
// OIP-REST-ERR-003, which grades it FAIL whatever the level ("FAIL =
// 5xx"). Two exceptions: want4xx, for requirements whose own test asks for
// a 4xx (an empty body, OIP-REST-INFER-004; malformed JSON,
// OIP-REST-INFER-024), where a 5xx also fails req; and soft500, the
// ambiguity that lets an HTTP 500 pass as a warning of req and
// OIP-REST-ERR-003 alike (A-18, element-count mismatches, whose test
// expects a 4xx too).
func rejection(e *exchange, req, bodyReq, soft500 string, want4xx bool) []finding {
	if err := e.answered(); err != nil {
		return []finding{on("", e, err)}
	}
	var fs []finding
	switch {
	case e.status < 400:
		return []finding{on(req, e, fmt.Errorf("%s %s: %s, want an error status (typically 400) with {\"error\": string}", e.method, e.path, e.got()))}
	case e.status >= 500:
		err := fmt.Errorf("%s %s: %s, want 4xx: a 5xx reports a server fault, not a rejected request", e.method, e.path, e.got())
		switch {
		case soft500 != "" && e.status == http.StatusInternalServerError:
			fs = append(fs, softOn(req, soft500, e, err), softOn(errStatusReq, soft500, e, err))
		case want4xx || soft500 != "":
			fs = append(fs, on(req, e, err), serverFault(e))
		default:
			fs = append(fs, serverFault(e))
		}
	case e.status != 400:
		fs = append(fs, on(errStatusReq, e, fmt.Errorf("%s %s: got %d, want 400 (\"typically 400\")", e.method, e.path, e.status)))
	}
	fs = append(fs, on(bodyReq, e, e.errorBody()))
	return fs
}

// errStatusReq grades the status code of rejected requests: 400 passes,
// another 4xx is a warning, a 5xx fails.
const errStatusReq = "OIP-REST-ERR-003"

// serverFault is the OIP-REST-ERR-003 finding for an answer to a request
// the server may refuse or accept: a 5xx is neither, and the catalog grades
// it FAIL ("PASS = 400; WARN = other 4xx; FAIL = 5xx"). The spec must carry
// the OIP-REST-ERR-003 label.
func serverFault(e *exchange) finding {
	if e.err != nil || e.status < 500 {
		return finding{req: errStatusReq}
	}
	return hardOn(errStatusReq, "a 5xx is a server fault, never a rejection (OIP-REST-ERR-003)", e,
		fmt.Errorf("%s %s: %s, want a 4xx (or success)", e.method, e.path, e.got()))
}

// ----- inference responses -----

// wireOutput is one entry of a response's "outputs", as sent.
type wireOutput struct {
	index    int
	fields   map[string]json.RawMessage
	name     string
	datatype string
	shape    []int64
	problems []string // schema problems (missing or mistyped fields)
	binSize  int64    // parameters.binary_data_size, -1 if absent
	bin      []byte   // its slice of the binary tail
}

// inferResult is a parsed REST inference response.
type inferResult struct {
	ex       *exchange
	top      map[string]json.RawMessage
	outputs  []*wireOutput
	framing  error // Inference-Header-Content-Length problem
	slicing  error // binary tail does not match binary_data_size
	jsonPart []byte
	tail     []byte
}

// parseInfer parses a 200 inference response. It fails only when there is
// no inference response to look at (no answer, a non-200 status, no JSON
// object at the start of the body); schema and framing problems are kept for
// the checks that own them. The JSON part is found by parsing, so a wrong or
// missing Inference-Header-Content-Length is reported once, as a framing
// problem (OIP-EXT-BIN-009), and does not hide the outputs.
func parseInfer(e *exchange) (*inferResult, error) {
	if err := e.wantStatus(http.StatusOK); err != nil {
		return nil, err
	}
	r := &inferResult{ex: e}
	dec := json.NewDecoder(bytes.NewReader(e.body))
	dec.UseNumber()
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil || top == nil {
		return nil, fmt.Errorf("inference response: body does not start with a JSON object (%s)", e.got())
	}
	r.top = top
	jsonLen := int(dec.InputOffset())
	r.jsonPart, r.tail = e.body[:jsonLen], e.body[jsonLen:]
	hv := e.header.Get(oip.HeaderInferenceHeaderContentLength)
	if hv != "" {
		n, err := strconv.Atoi(hv)
		switch {
		case err != nil || n < 0:
			r.framing = fmt.Errorf("%s is %q, want a byte count", oip.HeaderInferenceHeaderContentLength, hv)
		case n > len(e.body):
			r.framing = fmt.Errorf("%s is %d, larger than the %d-byte body", oip.HeaderInferenceHeaderContentLength, n, len(e.body))
		case n < jsonLen:
			r.framing = fmt.Errorf("%s is %d, inside the %d-byte JSON object", oip.HeaderInferenceHeaderContentLength, n, jsonLen)
		case n > jsonLen && len(bytes.TrimSpace(e.body[jsonLen:n])) > 0:
			r.framing = fmt.Errorf("%s is %d but the JSON object is %d bytes", oip.HeaderInferenceHeaderContentLength, n, jsonLen)
		default:
			// Whitespace after the object is still part of the JSON
			// text: the binary tail starts where the header says.
			r.jsonPart, r.tail = e.body[:n], e.body[n:]
		}
	} else if len(bytes.TrimSpace(r.tail)) > 0 {
		r.framing = fmt.Errorf("%d bytes follow the JSON object but there is no %s header", len(r.tail), oip.HeaderInferenceHeaderContentLength)
	}
	var outs []map[string]json.RawMessage
	if raw, ok := top["outputs"]; ok {
		if err := json.Unmarshal(raw, &outs); err != nil {
			outs = nil
		}
	}
	off := 0
	for i, f := range outs {
		o := &wireOutput{index: i, fields: f, binSize: -1}
		var err error
		if o.name, err = stringField(f, "name"); err != nil {
			o.problems = append(o.problems, err.Error())
		}
		if o.datatype, err = stringField(f, "datatype"); err != nil {
			o.problems = append(o.problems, err.Error())
		}
		if raw, ok := f["shape"]; !ok {
			o.problems = append(o.problems, `"shape" is missing`)
		} else if o.shape, err = shapeField(raw); err != nil {
			o.problems = append(o.problems, err.Error())
		}
		if p, ok := f["parameters"]; ok {
			var params map[string]json.RawMessage
			if json.Unmarshal(p, &params) == nil {
				if s, ok := params[oip.ParamBinaryDataSize]; ok {
					n, err := strconv.ParseInt(string(s), 10, 64)
					if err != nil || n < 0 {
						o.problems = append(o.problems, fmt.Sprintf("binary_data_size is %s, want a byte count", s))
					} else {
						o.binSize = n
					}
				}
			} else {
				o.problems = append(o.problems, "parameters is not an object")
			}
		}
		if _, hasData := f["data"]; !hasData && o.binSize < 0 {
			o.problems = append(o.problems, `"data" is missing (and no binary_data_size)`)
		}
		if o.binSize >= 0 {
			if int64(len(r.tail)-off) < o.binSize {
				r.slicing = errs(r.slicing, fmt.Errorf("output %q declares binary_data_size %d but only %d tail bytes remain", o.name, o.binSize, len(r.tail)-off))
			} else {
				o.bin = r.tail[off : off+int(o.binSize)]
				off += int(o.binSize)
			}
		}
		r.outputs = append(r.outputs, o)
	}
	if r.slicing == nil && off != len(r.tail) && len(bytes.TrimSpace(r.tail)) > 0 {
		r.slicing = fmt.Errorf("binary tail is %d bytes but the outputs' binary_data_size add up to %d", len(r.tail), off)
	}
	return r, nil
}

// output finds an output by name (never by position).
func (r *inferResult) output(name string) *wireOutput {
	for _, o := range r.outputs {
		if o.name == name {
			return o
		}
	}
	return nil
}

// countNamed is how many outputs carry name.
func (r *inferResult) countNamed(name string) int {
	n := 0
	for _, o := range r.outputs {
		if o.name == name {
			n++
		}
	}
	return n
}

func (r *inferResult) names() []string {
	var ns []string
	for _, o := range r.outputs {
		ns = append(ns, o.name)
	}
	return ns
}

// tensor decodes output name, from JSON data or from its binary slice.
func (r *inferResult) tensor(name string) (tensor.Tensor, error) {
	o := r.output(name)
	if o == nil {
		return tensor.Tensor{}, fmt.Errorf("output %q is missing (outputs: %v)", name, r.names())
	}
	if n := r.countNamed(name); n > 1 {
		// Which one is the result? A response must not leave it open.
		return tensor.Tensor{}, fmt.Errorf("output %q appears %d times (outputs: %v)", name, n, r.names())
	}
	if len(o.problems) > 0 {
		return tensor.Tensor{}, fmt.Errorf("output %q: %s", name, strings.Join(o.problems, "; "))
	}
	d, err := tensor.ParseDatatype(o.datatype)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("output %q: %v", name, err)
	}
	if o.binSize >= 0 {
		if o.bin == nil && o.binSize > 0 {
			return tensor.Tensor{}, fmt.Errorf("output %q: %v", name, r.slicing)
		}
		t, err := tensor.DecodeRaw(name, d, o.shape, o.bin)
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("output %q: binary data: %v", name, err)
		}
		return t, nil
	}
	data, err := tensor.DecodeJSONData(d, o.shape, o.fields["data"], 0)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("output %q: data: %v", name, err)
	}
	return tensor.Tensor{Name: name, Datatype: d, Shape: o.shape, Data: data}, nil
}

// expect compares every wanted output (by name) with what came back.
func (r *inferResult) expect(exact bool, want ...tensor.Tensor) error {
	var list []error
	for _, w := range want {
		got, err := r.tensor(w.Name)
		if err == nil {
			err = sameTensor(w, got, exact)
		}
		list = append(list, err)
	}
	return errs(list...)
}

// inferOK posts b and parses the answer as a successful inference.
func (t *target) inferOK(ctx context.Context, model, version string, b restBody) (*exchange, *inferResult, error) {
	e := t.post(ctx, model, version, b)
	r, err := parseInfer(e)
	if err != nil {
		return e, nil, err
	}
	return e, r, nil
}
