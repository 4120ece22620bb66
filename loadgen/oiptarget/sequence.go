package oiptarget

import (
	"context"
	"fmt"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/oip"
)

// appendSequenceParams appends the step's parameters to an encoded
// ModelInferRequest as map entries (a later entry of a key replaces an
// earlier one, so this also overrides any the payload had).
func appendSequenceParams(b []byte, step loadgen.SequenceStep) []byte {
	var v [16]byte
	id := protowire.AppendVarint(protowire.AppendTag(v[:0], fieldParamInt64, protowire.VarintType), step.ID)
	b = appendParam(b, paramSequenceID, id)
	b = appendBoolParam(b, paramSequenceStart, step.Start)
	return appendBoolParam(b, paramSequenceEnd, step.End)
}

// DoSequence sends request seq as step of its sequence: over a stream when
// rec is set (see DoStream), else unary.
func (t *OIPTarget) DoSequence(ctx context.Context, seq uint64, step loadgen.SequenceStep, rec *loadgen.StreamRecorder) error {
	if rec != nil {
		return t.doStream(ctx, seq, &step, rec)
	}
	p := &t.payloads[seq%uint64(len(t.payloads))]
	if t.rest != nil {
		// REST bodies are JSON: encode this request's parameters. The
		// sequence path is not the lean one.
		req := &oip.InferRequest{Model: t.cfg.Model, Version: t.cfg.ModelVersion, Parameters: oip.Parameters{}}
		for k, v := range t.params {
			req.Parameters[k] = v
		}
		req.Parameters[paramSequenceID] = int64(step.ID)
		req.Parameters[paramSequenceStart] = step.Start
		req.Parameters[paramSequenceEnd] = step.End
		for _, in := range p.inputs {
			req.Inputs = append(req.Inputs, oip.InferInput{Tensor: in})
		}
		cctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout.D())
		defer cancel()
		r, err := t.data.Infer(cctx, req)
		if err != nil || !t.sampled() {
			return err
		}
		return checkAnswer(t.info.Model.Outputs, r)
	}
	cctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout.D())
	defer cancel()
	if t.md != nil {
		cctx = metadata.NewOutgoingContext(cctx, t.md)
	}
	msg := client.NewPreEncoded(appendSequenceParams(append([]byte(nil), p.call.Message()...), step))
	var reply any = client.DiscardReply
	var kept client.RawMessage
	check := t.sampled()
	if check {
		reply = &kept
	}
	if err := t.conn.Invoke(cctx, modelInferMethod, msg, reply, t.callOpts...); err != nil {
		return fmt.Errorf("sequence %d: %w", step.ID, err)
	}
	if !check {
		return nil
	}
	r, err := decodeGRPCAnswer(kept.B)
	if err != nil {
		return fmt.Errorf("sequence %d: %w", step.ID, err)
	}
	if err := checkAnswer(t.info.Model.Outputs, r); err != nil {
		return fmt.Errorf("sequence %d: %w", step.ID, err)
	}
	return nil
}

// Sequence parameters as the sequence extension names them.
const (
	paramSequenceID    = "sequence_id"
	paramSequenceStart = "sequence_start"
	paramSequenceEnd   = "sequence_end"
)

// Field numbers for appending parameters to an encoded ModelInferRequest.
const (
	fieldRequestParameters = 4 // ModelInferRequest.parameters (map entries)
	fieldParamInt64        = 2 // InferParameter.int64_param
)
