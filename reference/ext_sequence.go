package reference

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference/model"
	"github.com/oipkit/oipkit/specs"
	"github.com/oipkit/oipkit/tensor"
)

// Sequences (Triton's sequence extension, catalog OIP-EXT-SEQ). A request
// names its sequence with the parameter sequence_id (a non-zero integer, or
// a non-empty string) and flags the first and last requests with
// sequence_start and sequence_end. The server keeps the state of each live
// sequence of a stateful model (model.Stateful) between requests, runs the
// requests of one sequence one at a time, forgets a sequence at its end or
// after Config.SequenceIdleTimeout without a request, and holds at most
// Config.MaxSequences live sequences.

// errTooManySequences is a start refused because MaxSequences are live.
var errTooManySequences = errors.New("too many live sequences")

// sequenceRef is a request's place in a sequence.
type sequenceRef struct {
	id         string // "u:42" or "s:abc"; "" when the request names no sequence
	shown      string // the id as the client sent it, for messages
	start, end bool
}

// sequenceOf reads and checks the sequence parameters of a request.
func sequenceOf(p oip.Parameters) (sequenceRef, error) {
	var r sequenceRef
	var err error
	if r.start, err = flagParam(p, oip.ParamSequenceStart); err != nil {
		return r, err
	}
	if r.end, err = flagParam(p, oip.ParamSequenceEnd); err != nil {
		return r, err
	}
	switch v := p[oip.ParamSequenceID].(type) {
	case nil:
	case int64:
		if v < 0 {
			return r, invalidf("parameter %s is %d; want a non-negative integer or a string", oip.ParamSequenceID, v)
		}
		if v != 0 {
			r.id, r.shown = fmt.Sprintf("u:%d", v), fmt.Sprint(v)
		}
	case uint64:
		if v != 0 {
			r.id, r.shown = fmt.Sprintf("u:%d", v), fmt.Sprint(v)
		}
	case float64:
		if v != math.Trunc(v) || v < 0 || v >= 1<<64 {
			return r, invalidf("parameter %s is %v; want a non-negative integer or a string", oip.ParamSequenceID, v)
		}
		if v != 0 {
			r.id, r.shown = fmt.Sprintf("u:%d", uint64(v)), fmt.Sprint(uint64(v))
		}
	case string:
		if v != "" {
			r.id, r.shown = "s:"+v, fmt.Sprintf("%q", v)
		}
	default:
		return r, invalidf("parameter %s is %T; want a non-negative integer or a string", oip.ParamSequenceID, v)
	}
	if r.id == "" && (r.start || r.end) {
		flag := oip.ParamSequenceStart
		if !r.start {
			flag = oip.ParamSequenceEnd
		}
		return r, invalidf("%s needs a non-zero integer or non-empty string %s", flag, oip.ParamSequenceID)
	}
	return r, nil
}

func flagParam(p oip.Parameters, name string) (bool, error) {
	v, ok := p[name]
	if !ok {
		return false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, invalidf("parameter %s is %T; want a boolean", name, v)
	}
	return b, nil
}

// sequence is one live sequence.
type sequence struct {
	mu    sync.Mutex // held while a request of the sequence runs
	state any
	last  time.Time // of the last request; guarded by sequences.mu
}

// sequences holds the live sequences of every stateful model.
type sequences struct {
	mu   sync.Mutex
	live map[string]*sequence // by model name and sequence id
	max  int
	idle time.Duration
}

func newSequences(maxLive int, idle time.Duration) *sequences {
	return &sequences{live: map[string]*sequence{}, max: maxLive, idle: idle}
}

// run runs one request of a stateful model within its sequence.
func (q *sequences) run(ctx context.Context, s *Server, m model.Stateful, name string, inputs map[string]tensor.Tensor, params oip.Parameters) ([]tensor.Tensor, error) {
	ref, err := sequenceOf(params)
	if err != nil {
		return nil, err
	}
	if ref.id == "" {
		return s.runModel(ctx, m, name, inputs, params) // the model explains
	}
	key := name + "\x00" + ref.id
	q.mu.Lock()
	now := time.Now()
	seq := q.live[key]
	if seq != nil && now.Sub(seq.last) > q.idle {
		delete(q.live, key) // expired
		seq = nil
	}
	switch {
	case ref.start:
		if seq == nil && len(q.live) >= q.max {
			q.expire(now)
		}
		if seq == nil && len(q.live) >= q.max {
			q.mu.Unlock()
			return nil, fmt.Errorf("%w: cannot start sequence %s of model %q: %d sequences are live (server option --max-sequences); end one with %s",
				errTooManySequences, ref.shown, name, q.max, oip.ParamSequenceEnd)
		}
		seq = &sequence{} // a restart replaces the sequence
		q.live[key] = seq
	case seq == nil:
		q.mu.Unlock()
		return nil, invalidf("sequence %s of model %q is not live (never started, ended, or idle for more than %s): start it with %s",
			ref.shown, name, q.idle, oip.ParamSequenceStart)
	}
	seq.last = now
	if ref.end {
		delete(q.live, key)
	}
	q.mu.Unlock()

	seq.mu.Lock()
	defer seq.mu.Unlock()
	outs, next, err := s.runSequence(ctx, m, name, inputs, params, seq.state)
	if err == nil {
		seq.state = next
	}
	return outs, err
}

// expire drops sequences idle for longer than q.idle; q.mu is held.
func (q *sequences) expire(now time.Time) {
	for k, seq := range q.live {
		if now.Sub(seq.last) > q.idle {
			delete(q.live, k)
		}
	}
}

// runSequence calls m.InferSequence with panics recovered, like runModel.
func (s *Server) runSequence(ctx context.Context, m model.Stateful, name string, inputs map[string]tensor.Tensor, params oip.Parameters, state any) (outs []tensor.Tensor, next any, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("model panicked", "model", name, "panic", p)
			outs, next, err = nil, nil, &panicError{where: fmt.Sprintf("model %q", name), value: p}
		}
	}()
	outs, next, err = m.InferSequence(ctx, inputs, params, state)
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", name, err)
	}
	return outs, next, nil
}

// extSequence is the sequence extension, advertised with string ids as
// "sequence(string_id)". Its requests are ordinary inference requests (REST,
// ModelInfer) and ModelStreamInfer streams (ext_stream.go), which serve any
// model, stateful or not.
var extSequence = extension{
	name:         specs.ExtSequence,
	advertised:   true,
	capabilities: []string{specs.CapabilityStringID},
	grpc:         []string{"ModelStreamInfer"},
}
