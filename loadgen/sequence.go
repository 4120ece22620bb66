package loadgen

import (
	"context"
	"sync/atomic"
)

// SequenceConfig makes the run send its requests in sequences, the way
// perf_analyzer does for stateful models: every request carries the
// sequence extension's parameters sequence_id, sequence_start (on the
// first request of a sequence) and sequence_end (on the last). A closed
// loop runs one sequence per worker at a time (Concurrency sequences
// live); an open loop keeps Sequences of them live and gives each request
// to an idle one (a request due while all are busy waits for one, and the
// wait counts in its response time). Requests of one sequence never
// overlap. A request that fails ends its sequence: the next request
// starts a new one.
type SequenceConfig struct {
	// Length is the number of requests per sequence (perf_analyzer's
	// sequence-length option).
	Length int `json:"length"`
	// Sequences is how many sequences an open loop keeps live
	// (perf_analyzer's num-of-sequences option; default 4).
	Sequences int `json:"sequences,omitempty"`
	// IDStart is the first sequence id (default 1); ids are unique across
	// the segments of a split test.
	IDStart uint64 `json:"idStart,omitempty"`
}

// DefaultSequences is an open loop's number of live sequences.
const DefaultSequences = 4

func (c *Config) normalizeSequences() error {
	s := c.Sequence
	if s == nil {
		return nil
	}
	switch {
	case s.Length < 1:
		return configErr("Sequence.Length must be at least 1, got %d", s.Length)
	case s.Sequences < 0:
		return configErr("Sequence.Sequences must be at least 1, got %d", s.Sequences)
	case s.Sequences > 0 && !c.OpenLoop():
		return configErr("Sequence.Sequences applies to open-loop runs (Load.Rate); a closed loop runs one sequence per worker (Load.Concurrency)")
	}
	if s.Sequences == 0 && c.OpenLoop() {
		s.Sequences = DefaultSequences
	}
	if s.IDStart == 0 {
		s.IDStart = 1
	}
	return nil
}

// SequenceStep says where a request stands in its sequence.
type SequenceStep struct {
	ID         uint64
	Start, End bool
}

// A SequenceTarget sends requests that belong to sequences. rec is nil for
// unary requests, and records the responses of a streamed one.
type SequenceTarget interface {
	Target
	DoSequence(ctx context.Context, seq uint64, step SequenceStep, rec *StreamRecorder) error
}

// sequenceState is one live sequence of the run: its id and the position
// of its next request.
type sequenceState struct {
	id  uint64
	pos int
}

// sequences hands out sequence ids: unique in the whole test, segment
// by segment (segment i of n uses ids IDStart+i, IDStart+i+n, ...).
type sequences struct {
	cfg  SequenceConfig
	seg  Segment
	next atomic.Uint64
	idle chan *sequenceState // open loop: the live sequences not in use
}

func newSequences(cfg SequenceConfig, seg Segment, open bool) *sequences {
	s := &sequences{cfg: cfg, seg: seg}
	if open {
		s.idle = make(chan *sequenceState, cfg.Sequences)
		for range cfg.Sequences {
			s.idle <- &sequenceState{}
		}
	}
	return s
}

// step returns the step of st's next request and advances st.
func (s *sequences) step(st *sequenceState) SequenceStep {
	if st.pos == 0 {
		n := s.next.Add(1) - 1
		st.id = s.cfg.IDStart + n*uint64(max(s.seg.Count, 1)) + uint64(s.seg.Index)
	}
	step := SequenceStep{ID: st.id, Start: st.pos == 0, End: st.pos == s.cfg.Length-1}
	st.pos = (st.pos + 1) % s.cfg.Length
	return step
}

// doSequence sends request seq as the next of st's sequence, streamed when
// rec is set, and records it.
func (r *runner) doSequence(ctx context.Context, sh *shard, st *sequenceState, rec *StreamRecorder, seq uint64, due int64) {
	if st == nil { // open loop: wait for an idle sequence
		select {
		case st = <-r.seqs.idle:
			defer func() { r.seqs.idle <- st }()
		case <-ctx.Done():
			return
		}
	}
	step := r.seqs.step(st)
	if rec != nil {
		rec.n = 0
	}
	r.inflight.Add(1)
	sent := r.now()
	err := r.sequencer.DoSequence(ctx, seq, step, rec)
	done := r.now()
	r.inflight.Add(-1)
	if err != nil {
		st.pos = 0 // the server's state of this sequence is unknown now
		if ctx.Err() != nil {
			return
		}
	}
	if rec != nil {
		sh.recordStream(due, sent, done, err, rec.n, rec.first)
		return
	}
	sh.record(due, sent, done, err)
}

// endSequence ends st's sequence if a phase stopped in the middle of it:
// one more request, with sequence_end and unrecorded, so that the run
// leaves no sequence live on the server (a server holds a bounded number).
func (r *runner) endSequence(ctx context.Context, st *sequenceState) {
	if st.pos == 0 || ctx.Err() != nil {
		return
	}
	var rec *StreamRecorder
	if r.streamer != nil {
		rec = &StreamRecorder{r: r, discard: true}
	}
	_ = r.sequencer.DoSequence(ctx, 0, SequenceStep{ID: st.id, End: true}, rec)
	st.pos = 0
}

// endIdleSequences ends the open loop's live sequences at the end of a
// phase (every sequence is idle then).
func (r *runner) endIdleSequences(ctx context.Context) {
	for range cap(r.seqs.idle) {
		st := <-r.seqs.idle
		r.endSequence(ctx, st)
		r.seqs.idle <- st
	}
}
