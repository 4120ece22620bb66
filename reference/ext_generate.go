package reference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// Text generation (Triton's provisional generate extension, catalog
// OIP-EXT-GEN): POST /v2/models/{m}[/versions/{v}]/generate answers one
// JSON object {"id", "model_name", "model_version", "text_output"};
// .../generate_stream answers text/event-stream, one "data: {…}" event per
// response of the model. As in Triton, the request's text_input goes to the
// model's BYTES input text_input, its other scalar members and its
// "parameters" become request parameters, and the output text_output is
// the answer. An error before the first event is an HTTP error status with
// {"error"}; an error after it is an event {"error": "…"} (the status is
// already 200).

// generateRequest is a decoded generate request.
type generateRequest struct {
	id     string
	text   []byte
	params oip.Parameters
}

// decodeGenerate reads a generate body.
func decodeGenerate(body []byte) (*generateRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil || top == nil {
		return nil, invalidf("generate request: body is not a JSON object")
	}
	g := &generateRequest{params: oip.Parameters{}}
	raw, ok := top[fixture.TextInput]
	if !ok {
		return nil, invalidf("generate request: %q is required", fixture.TextInput)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, invalidf("generate request: %q must be a string", fixture.TextInput)
	}
	g.text = []byte(text)
	for k, v := range top {
		switch k {
		case fixture.TextInput:
		case "id":
			if err := json.Unmarshal(v, &g.id); err != nil {
				return nil, invalidf("generate request: \"id\" must be a string")
			}
		case "parameters":
			var ps map[string]json.RawMessage
			if err := json.Unmarshal(v, &ps); err != nil {
				return nil, invalidf("generate request: \"parameters\" must be an object")
			}
			for pk, pv := range ps {
				val, err := scalarParam(pv)
				if err != nil {
					return nil, invalidf("generate request: parameter %q: %v", pk, err)
				}
				g.params[pk] = val
			}
		default: // Triton passes other members to the model as parameters
			val, err := scalarParam(v)
			if err != nil {
				return nil, invalidf("generate request: member %q: %v", k, err)
			}
			g.params[k] = val
		}
	}
	return g, nil
}

// scalarParam reads a JSON string, number or boolean as a parameter value.
func scalarParam(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string, bool:
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", x)
		}
		return f, nil
	}
	return nil, errors.New("want a string, number or boolean")
}

// serveGenerate handles generate and generate_stream. A request to a
// known model version is recorded in its statistics from the request's
// arrival to the last event; generate_stream also records the time to the
// first event and the gaps between events.
func (s *Server) serveGenerate(w *statusWriter, r *http.Request, rt route, stream bool) {
	start := time.Now()
	fail := func(err error) {
		status := httpStatus(err)
		if status >= 500 {
			s.log.Error("generate failed", "model", rt.model, "status", status, "err", err)
		}
		writeError(w, status, err.Error())
	}
	m, version, err := s.repo.Lookup(rt.model, rt.version)
	if err != nil {
		fail(err)
		return
	}
	st := s.stats.of(rt.model, version)
	respond := fail
	fail = func(err error) {
		st.failed(time.Since(start))
		respond(err)
	}
	body, err := s.readBody(w, r, nil)
	if err != nil {
		fail(err)
		return
	}
	g, err := decodeGenerate(body)
	if err != nil {
		fail(err)
		return
	}
	md := m.Metadata()
	if !generates(&md) {
		fail(invalidf("model %q cannot generate text: it needs a BYTES input %q and a BYTES output %q", md.Name, fixture.TextInput, fixture.TextOutput))
		return
	}
	req := &oip.InferRequest{Model: md.Name, Version: version, ID: g.id, Parameters: g.params,
		Inputs:  []oip.InferInput{{Tensor: tensor.Tensor{Name: fixture.TextInput, Datatype: tensor.Bytes, Shape: []int64{1}, Data: [][]byte{g.text}}}},
		Outputs: []oip.RequestedOutput{{Name: fixture.TextOutput}}}
	inputs, err := validateRequest(&md, req)
	if err != nil {
		fail(err)
		return
	}
	defer releaseInputs(inputs)
	inputDone := time.Now()
	answer := func(text []byte) map[string]string {
		return map[string]string{"id": g.id, "model_name": md.Name, "model_version": version, fixture.TextOutput: string(text)}
	}
	if !stream {
		var text []byte
		collect := func(outs []tensor.Tensor, _ bool) error {
			resp, err := response(&md, labelsOf(m), version, req, outs)
			if err != nil {
				return err
			}
			for _, e := range resp.Outputs[0].Data.([][]byte) {
				text = append(text, e...)
			}
			return nil
		}
		if err := s.generate(r, m, &md, inputs, req, collect); err != nil {
			fail(err)
			return
		}
		inferDone := time.Now()
		writeJSON(w, http.StatusOK, answer(text))
		st.succeeded(start, 0, inputDone, inferDone, time.Now())
		return
	}

	flusher, _ := w.ResponseWriter.(http.Flusher)
	started := false
	event := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	timer := st.responseTimer(start)
	err = s.generate(r, m, &md, inputs, req, func(outs []tensor.Tensor, _ bool) error {
		resp, err := response(&md, labelsOf(m), version, req, outs)
		if err != nil {
			return err
		}
		if err := event(answer(bytes.Join(resp.Outputs[0].Data.([][]byte), nil))); err != nil {
			return err
		}
		timer.responded()
		return nil
	})
	inferDone := time.Now()
	switch {
	case err == nil && !started: // no token at all: the answer is an empty stream
		event(answer(nil))
	case err != nil && !started:
		fail(err)
		return
	case err != nil:
		s.log.Debug("generate_stream failed after streaming started", "model", md.Name, "err", err)
		event(map[string]string{"error": err.Error()})
		st.failed(time.Since(start))
		return
	}
	st.succeeded(start, 0, inputDone, inferDone, time.Now())
}

// generates reports whether a model has the generate tensors.
func generates(md *oip.ModelMetadata) bool {
	in := findTensor(md.Inputs, fixture.TextInput)
	out := findTensor(md.Outputs, fixture.TextOutput)
	return in != nil && out != nil && in.Datatype == tensor.Bytes && out.Datatype == tensor.Bytes
}

// generate runs a generate request: decoupled models answer through send
// as they go, others once.
func (s *Server) generate(r *http.Request, m model.Model, md *oip.ModelMetadata, inputs map[string]tensor.Tensor, req *oip.InferRequest, send func([]tensor.Tensor, bool) error) (err error) {
	gate, _, err := s.instances.enter(r.Context(), md.Name, req.Parameters) // instances.go
	if err != nil {
		return err
	}
	defer gate.leave()
	d, ok := m.(model.Decoupled)
	if !ok {
		outs, err := s.runModel(r.Context(), m, md.Name, inputs, req.Parameters)
		if err != nil {
			return err
		}
		return send(outs, true)
	}
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{where: fmt.Sprintf("model %q", md.Name), value: p}
		}
	}()
	if err := d.InferStream(r.Context(), inputs, req.Parameters, send); err != nil {
		return fmt.Errorf("model %q: %w", md.Name, err)
	}
	return nil
}

// extGenerate is Triton's generate extension: POST generate and
// generate_stream (server-sent events) for any model with a BYTES text
// input and output. It is served, not advertised, as Triton does; the
// suite finds it by probing.
var extGenerate = extension{name: specs.ExtGenerate, rest: []extRoute{
	{method: http.MethodPost, path: "/v2/models/{m}/generate", serve: generateRoute(false)},
	{method: http.MethodPost, path: "/v2/models/{m}/versions/{v}/generate", serve: generateRoute(false)},
	{method: http.MethodPost, path: "/v2/models/{m}/generate_stream", serve: generateRoute(true)},
	{method: http.MethodPost, path: "/v2/models/{m}/versions/{v}/generate_stream", serve: generateRoute(true)},
}}

func generateRoute(stream bool) func(*Server, *statusWriter, *http.Request, routeParams) {
	return func(s *Server, w *statusWriter, r *http.Request, p routeParams) {
		s.serveGenerate(w, r, route{model: p.model, version: p.version}, stream)
	}
}
