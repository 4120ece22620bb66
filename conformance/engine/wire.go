package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// This file reads and writes REST bodies at the byte level. Requests are
// built by hand so that a spec controls every field (and can break any of
// them); responses are checked from the raw body, because the requirements
// are about the wire, not about what a lenient decoder would accept.

// Obj is a JSON object under construction.
type Obj = map[string]any

// Body is a REST inference request: its JSON object and the binary buffers
// that follow it, in input order.
type Body struct {
	JSON Obj
	Bin  [][]byte
}

// JSONInput is the REST JSON form of an input tensor, flat data.
func JSONInput(t tensor.Tensor) Obj {
	return Obj{"name": t.Name, "datatype": string(t.Datatype), "shape": t.Shape, "data": JSONValues(t)}
}

// RequestID is the id every inference request of the suite carries, as
// a client that matches answers to requests sends one: a spec about some
// other rule must not also test requests without an id (the id is
// optional, OIP-REST-INFER-006), which a server may mishandle (KServe
// 0.15 answers them 500). The specs whose subject is a request without an
// id delete it.
const RequestID = "oipkit"

// Request is a REST request with the given inputs and the suite's id
// ([RequestID]), no other fields.
func Request(inputs ...Obj) Body {
	list := make([]any, len(inputs))
	for i, in := range inputs {
		list[i] = in
	}
	return Body{JSON: Obj{"id": RequestID, "inputs": list}}
}

// Inputs returns the "inputs" objects of b.
func (b Body) Inputs() []Obj {
	var out []Obj
	list, _ := b.JSON["inputs"].([]any)
	for _, in := range list {
		if o, ok := in.(Obj); ok {
			out = append(out, o)
		}
	}
	return out
}

// AddBinary adds t as a binary input (binary_data_size, no data).
func (b *Body) AddBinary(t tensor.Tensor) error {
	raw, err := tensor.EncodeRaw(t)
	if err != nil {
		return err
	}
	in := Obj{"name": t.Name, "datatype": string(t.Datatype), "shape": t.Shape,
		"parameters": Obj{oip.ParamBinaryDataSize: len(raw)}}
	list, _ := b.JSON["inputs"].([]any)
	b.JSON["inputs"] = append(list, in)
	b.Bin = append(b.Bin, raw)
	return nil
}

// Encode returns the body and, when it carries binary data, the JSON length
// for Inference-Header-Content-Length (-1 otherwise).
func (b Body) Encode() ([]byte, int) {
	js, err := json.Marshal(b.JSON)
	if err != nil {
		panic(fmt.Sprintf("conformance: marshal request: %v", err)) // the suite's own literal values only
	}
	if len(b.Bin) == 0 {
		return js, -1
	}
	out := append([]byte(nil), js...)
	for _, r := range b.Bin {
		out = append(out, r...)
	}
	return out, len(js)
}

// wire is the encoded body and its headers.
func (b Body) wire() ([]byte, http.Header) {
	body, hl := b.Encode()
	h := http.Header{"Content-Type": {"application/json"}}
	if hl >= 0 {
		h.Set("Content-Type", "application/octet-stream")
		h.Set(oip.HeaderInferenceHeaderContentLength, strconv.Itoa(hl))
	}
	return body, h
}

// Post sends a REST inference request to model (and version, if not "").
func Post(ctx context.Context, model, version string, b Body) *Exchange {
	body, h := b.wire()
	return Do(ctx, http.MethodPost, InferPath(model, version), h, body)
}

// PostRaw sends body bytes as they are to model's infer route; a nil header
// means Content-Type application/json.
func PostRaw(ctx context.Context, model string, h http.Header, body []byte) *Exchange {
	if h == nil {
		h = http.Header{"Content-Type": {"application/json"}}
	}
	return Do(ctx, http.MethodPost, InferPath(model, ""), h, body)
}

// InferPath is the infer route of model (and version, if not "").
func InferPath(model, version string) string {
	if version != "" {
		return "/v2/models/" + PathEscape(model) + "/versions/" + PathEscape(version) + "/infer"
	}
	return "/v2/models/" + PathEscape(model) + "/infer"
}

// PathEscape escapes a model name for a URL path segment.
func PathEscape(s string) string { return url.PathEscape(s) }

// JSONValues is the element list of t as JSON values (for hand-built REST
// bodies): numbers, booleans or strings, never base64.
func JSONValues(t tensor.Tensor) []any {
	out := make([]any, t.Len())
	for i := range out {
		switch e := element(t, i).(type) {
		case tensor.Float16:
			out[i] = e.Float32()
		case tensor.BFloat16:
			out[i] = e.Float32()
		default:
			out[i] = e
		}
	}
	return out
}

// Nested reshapes a flat element list into nested arrays following shape.
func Nested(flat []any, shape []int64) any {
	if len(shape) <= 1 {
		return flat
	}
	rows := int(shape[0])
	if rows == 0 {
		return []any{}
	}
	per := len(flat) / rows
	out := make([]any, rows)
	for r := range out {
		out[r] = Nested(flat[r*per:(r+1)*per], shape[1:])
	}
	return out
}

// ----- JSON bodies -----

// Object is a JSON object body, members kept raw (numbers exact), with the
// exchange it came from.
type Object struct {
	Ex      *Exchange
	Members map[string]json.RawMessage
}

// Evidence is the exchange's.
func (o *Object) Evidence() *report.Evidence { return o.Ex.Evidence() }

// DecodeObject parses a JSON object keeping numbers exact.
func DecodeObject(b []byte) (map[string]json.RawMessage, error) {
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

// AsObject reads the exchange's body as a JSON object.
func (e *Exchange) AsObject() (*Object, error) {
	if err := e.noAnswer(); err != nil {
		return nil, err
	}
	m, err := DecodeObject(e.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (%s)", e.What(), err, e.Got())
	}
	return &Object{Ex: e, Members: m}, nil
}

// String returns a required string member.
func (o *Object) String(key string) (string, error) { return StringField(o.Members, key) }

// StringField returns a required string member of m.
func StringField(m map[string]json.RawMessage, key string) (string, error) {
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

// ShapeField parses a shape: an array of integers.
func ShapeField(raw json.RawMessage) ([]int64, error) {
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

// isMediaType reports whether a Content-Type value is of media type want.
func isMediaType(v, want string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == want
}

// ----- inference responses -----

// Output is one entry of a REST response's "outputs", as sent.
type Output struct {
	Index    int
	Fields   map[string]json.RawMessage
	Name     string
	Datatype string
	Shape    []int64
	Problems []string // schema problems (missing or mistyped fields)
	BinSize  int64    // parameters.binary_data_size, -1 if absent
	Bin      []byte   // its slice of the binary tail
}

// InferResponse is a parsed REST inference response.
type InferResponse struct {
	Ex       *Exchange
	Top      map[string]json.RawMessage
	Outputs  []*Output
	Framing  error // Inference-Header-Content-Length problem
	Slicing  error // binary tail does not match binary_data_size
	JSONPart []byte
	Tail     []byte
}

// AsInferResponse parses the exchange as a successful (200) inference
// response. It fails only when there is no inference response to look at
// (no answer, a non-200 status, no JSON object at the start of the body);
// schema and framing problems are kept for the checks that own them. The
// JSON part is found by parsing, so a wrong or missing
// Inference-Header-Content-Length is reported once, as a framing problem
// (OIP-EXT-BIN-009), and does not hide the outputs.
func (e *Exchange) AsInferResponse() (*InferResponse, error) {
	if e.parsed == nil && e.parseErr == nil {
		e.parsed, e.parseErr = parseInfer(e)
	}
	return e.parsed, e.parseErr
}

func parseInfer(e *Exchange) (*InferResponse, error) {
	if err := e.noAnswer(); err != nil {
		return nil, err
	}
	if e.Status != http.StatusOK {
		return nil, failedAnswer("%s: %s, want 200", e.What(), e.Got())
	}
	r := &InferResponse{Ex: e}
	dec := json.NewDecoder(bytes.NewReader(e.Body))
	dec.UseNumber()
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil || top == nil {
		return nil, failedAnswer("inference response: body does not start with a JSON object (%s)", e.Got())
	}
	r.Top = top
	jsonLen := int(dec.InputOffset())
	r.JSONPart, r.Tail = e.Body[:jsonLen], e.Body[jsonLen:]
	hv := e.Header.Get(oip.HeaderInferenceHeaderContentLength)
	if hv != "" {
		n, err := strconv.Atoi(hv)
		switch {
		case err != nil || n < 0:
			r.Framing = fmt.Errorf("%s is %q, want a byte count", oip.HeaderInferenceHeaderContentLength, hv)
		case n > len(e.Body):
			r.Framing = fmt.Errorf("%s is %d, larger than the %d-byte body", oip.HeaderInferenceHeaderContentLength, n, len(e.Body))
		case n < jsonLen:
			r.Framing = fmt.Errorf("%s is %d, inside the %d-byte JSON object", oip.HeaderInferenceHeaderContentLength, n, jsonLen)
		case n > jsonLen && len(bytes.TrimSpace(e.Body[jsonLen:n])) > 0:
			r.Framing = fmt.Errorf("%s is %d but the JSON object is %d bytes", oip.HeaderInferenceHeaderContentLength, n, jsonLen)
		default:
			// Whitespace after the object is still part of the JSON
			// text: the binary tail starts where the header says.
			r.JSONPart, r.Tail = e.Body[:n], e.Body[n:]
		}
	} else if len(bytes.TrimSpace(r.Tail)) > 0 {
		r.Framing = fmt.Errorf("%d bytes follow the JSON object but there is no %s header", len(r.Tail), oip.HeaderInferenceHeaderContentLength)
	}
	var outs []map[string]json.RawMessage
	if raw, ok := top["outputs"]; ok {
		if err := json.Unmarshal(raw, &outs); err != nil {
			outs = nil
		}
	}
	off := 0
	for i, f := range outs {
		o := &Output{Index: i, Fields: f, BinSize: -1}
		var err error
		if o.Name, err = StringField(f, "name"); err != nil {
			o.Problems = append(o.Problems, err.Error())
		}
		if o.Datatype, err = StringField(f, "datatype"); err != nil {
			o.Problems = append(o.Problems, err.Error())
		}
		if raw, ok := f["shape"]; !ok {
			o.Problems = append(o.Problems, `"shape" is missing`)
		} else if o.Shape, err = ShapeField(raw); err != nil {
			o.Problems = append(o.Problems, err.Error())
		}
		if p, ok := f["parameters"]; ok {
			var params map[string]json.RawMessage
			if json.Unmarshal(p, &params) == nil {
				if s, ok := params[oip.ParamBinaryDataSize]; ok {
					n, err := strconv.ParseInt(string(s), 10, 64)
					if err != nil || n < 0 {
						o.Problems = append(o.Problems, fmt.Sprintf("binary_data_size is %s, want a byte count", s))
					} else {
						o.BinSize = n
					}
				}
			} else {
				o.Problems = append(o.Problems, "parameters is not an object")
			}
		}
		if _, hasData := f["data"]; !hasData && o.BinSize < 0 {
			o.Problems = append(o.Problems, `"data" is missing (and no binary_data_size)`)
		}
		if o.BinSize >= 0 {
			if int64(len(r.Tail)-off) < o.BinSize {
				r.Slicing = errs(r.Slicing, fmt.Errorf("output %q declares binary_data_size %d but only %d tail bytes remain", o.Name, o.BinSize, len(r.Tail)-off))
			} else {
				o.Bin = r.Tail[off : off+int(o.BinSize)]
				off += int(o.BinSize)
			}
		}
		r.Outputs = append(r.Outputs, o)
	}
	if r.Slicing == nil && off != len(r.Tail) && len(bytes.TrimSpace(r.Tail)) > 0 {
		r.Slicing = fmt.Errorf("binary tail is %d bytes but the outputs' binary_data_size add up to %d", len(r.Tail), off)
	}
	return r, nil
}

// Evidence is the exchange's.
func (r *InferResponse) Evidence() *report.Evidence { return r.Ex.Evidence() }

// Output finds an output by name (never by position).
func (r *InferResponse) Output(name string) *Output {
	for _, o := range r.Outputs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// Names lists the output names in response order.
func (r *InferResponse) Names() []string {
	var ns []string
	for _, o := range r.Outputs {
		ns = append(ns, o.Name)
	}
	return ns
}

func (r *InferResponse) countNamed(name string) int {
	n := 0
	for _, o := range r.Outputs {
		if o.Name == name {
			n++
		}
	}
	return n
}

// Tensor decodes output name, from JSON data or from its binary slice.
func (r *InferResponse) Tensor(name string) (tensor.Tensor, error) {
	o := r.Output(name)
	if o == nil {
		return tensor.Tensor{}, fmt.Errorf("output %q is missing (outputs: %v)", name, r.Names())
	}
	if n := r.countNamed(name); n > 1 {
		// Which one is the result? A response must not leave it open.
		return tensor.Tensor{}, fmt.Errorf("output %q appears %d times (outputs: %v)", name, n, r.Names())
	}
	if len(o.Problems) > 0 {
		return tensor.Tensor{}, fmt.Errorf("output %q: %s", name, strings.Join(o.Problems, "; "))
	}
	d, err := tensor.ParseDatatype(o.Datatype)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("output %q: %v", name, err)
	}
	if o.BinSize >= 0 {
		if o.Bin == nil && o.BinSize > 0 {
			return tensor.Tensor{}, fmt.Errorf("output %q: %v", name, r.Slicing)
		}
		t, err := tensor.DecodeRaw(name, d, o.Shape, o.Bin)
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("output %q: binary data: %v", name, err)
		}
		return t, nil
	}
	data, err := tensor.DecodeJSONData(d, o.Shape, o.Fields["data"], 0)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("output %q: data: %v", name, err)
	}
	return tensor.Tensor{Name: name, Datatype: d, Shape: o.Shape, Data: data}, nil
}
