package reference

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/tensor"
)

// infer runs a decoded request on m (the resolved version of req.Model) and
// builds the response: it validates the request against the metadata, runs
// the model with panics recovered, and keeps the requested outputs in the
// requested order (all outputs in metadata order when none were requested).
// REST and gRPC share it, so both protocols behave identically. It records
// the request in the statistics of the version. A model with a limited
// number of execution instances runs it when one is free.
func (s *Server) infer(ctx context.Context, m model.Model, version string, req *oip.InferRequest) (*oip.InferResponse, error) {
	start := time.Now()
	md := m.Metadata()
	st := s.stats.of(md.Name, version)
	gate, queued, err := s.instances.enter(ctx, md.Name, req.Parameters) // instances.go
	if err != nil {
		st.failed(time.Since(start))
		return nil, err
	}
	defer gate.leave()
	resp, inputDone, inferDone, err := s.inferTimed(ctx, m, &md, version, req)
	end := time.Now()
	if err != nil {
		st.failed(end.Sub(start))
		return nil, err
	}
	st.succeeded(start, queued, inputDone, inferDone, end)
	return resp, nil
}

// inferTimed is infer without the statistics; it returns when validation
// and the model finished. A stateful model runs within its sequence.
func (s *Server) inferTimed(ctx context.Context, m model.Model, md *oip.ModelMetadata, version string, req *oip.InferRequest) (resp *oip.InferResponse, inputDone, inferDone time.Time, err error) {
	if err := s.readSHMInputs(req); err != nil {
		return nil, inputDone, inferDone, err
	}
	if err := s.checkSHMOutputs(req); err != nil {
		return nil, inputDone, inferDone, err
	}
	inputs, err := validateRequest(md, req)
	if err != nil {
		return nil, inputDone, inferDone, err
	}
	defer releaseInputs(inputs)
	inputDone = time.Now()
	ctx, cancel := scheduleContext(ctx, req.Parameters)
	defer cancel()
	var outs []tensor.Tensor
	if st, ok := m.(model.Stateful); ok {
		outs, err = s.sequences.run(ctx, s, st, md.Name, inputs, req.Parameters)
	} else {
		outs, err = s.runModel(ctx, m, md.Name, inputs, req.Parameters)
	}
	inferDone = time.Now()
	if err != nil {
		return nil, inputDone, inferDone, err
	}
	if resp, err = response(md, labelsOf(m), version, req, outs); err != nil {
		return nil, inputDone, inferDone, err
	}
	if err := s.writeSHMOutputs(req, resp); err != nil {
		return nil, inputDone, inferDone, err
	}
	return resp, inputDone, inferDone, nil
}

// response builds the response to req from the model's outputs: the
// requested outputs in the requested order, or every output in metadata
// order when none was requested. A requested output with the classification
// parameter is replaced by its top classes, labelled by labels (may be nil).
func response(md *oip.ModelMetadata, labels labeler, version string, req *oip.InferRequest, outs []tensor.Tensor) (*oip.InferResponse, error) {
	n := len(req.Outputs)
	if n == 0 {
		n = len(md.Outputs)
	}
	resp := newResponse(n)
	resp.Model, resp.Version, resp.ID = md.Name, version, req.ID
	outputName := func(i int) string {
		if len(req.Outputs) > 0 {
			return req.Outputs[i].Name
		}
		return md.Outputs[i].Name
	}
	for i := range n {
		t, err := producedOutput(md, outs, outputName(i))
		if err != nil {
			return nil, err
		}
		if len(req.Outputs) > 0 {
			if k, ok, _ := classificationCount(md, &req.Outputs[i]); ok {
				var l []string
				if labels != nil {
					l = labels.Labels(t.Name)
				}
				if t, err = classify(t, k, l); err != nil {
					return nil, err
				}
			}
		}
		resp.Outputs = append(resp.Outputs, oip.InferOutput{Tensor: t})
	}
	return resp, nil
}

// newResponse allocates a response with room for n outputs, in one
// allocation when n is small, as it is for most models.
func newResponse(n int) *oip.InferResponse {
	if n <= 2 {
		r := new(struct {
			resp    oip.InferResponse
			outputs [2]oip.InferOutput
		})
		r.resp.Outputs = r.outputs[:0:n]
		return &r.resp
	}
	return &oip.InferResponse{Outputs: make([]oip.InferOutput, 0, n)}
}

// runModel calls m.Infer, turning a panic into a panicError so that one bad
// model cannot take the server down.
func (s *Server) runModel(ctx context.Context, m model.Model, name string, inputs map[string]tensor.Tensor, params oip.Parameters) (outs []tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("model panicked", "model", name, "panic", p, "stack", string(debug.Stack()))
			err = &panicError{where: fmt.Sprintf("model %q", name), value: p}
		}
	}()
	outs, err = m.Infer(ctx, inputs, params)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	return outs, nil
}

// producedOutput finds output name among the model's results and checks it
// against the metadata; a mismatch is the model's fault (a server error).
func producedOutput(md *oip.ModelMetadata, outs []tensor.Tensor, name string) (tensor.Tensor, error) {
	meta := findTensor(md.Outputs, name)
	for _, t := range outs {
		if t.Name != name {
			continue
		}
		if err := t.Validate(); err != nil {
			return tensor.Tensor{}, fmt.Errorf("model %q produced a bad output: %w", md.Name, err)
		}
		if meta == nil || t.Datatype != meta.Datatype || !tensor.ShapeMatches(meta.Shape, t.Shape) {
			return tensor.Tensor{}, fmt.Errorf("model %q produced output %q as %s %v, which its metadata does not declare",
				md.Name, name, t.Datatype, t.Shape)
		}
		return t, nil
	}
	return tensor.Tensor{}, fmt.Errorf("model %q did not produce output %q", md.Name, name)
}
