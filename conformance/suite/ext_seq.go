package suite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	. "github.com/oipkit/oipkit/conformance/engine"
	"github.com/oipkit/oipkit/conformance/report"
	"github.com/oipkit/oipkit/fixture"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs"
	pb "github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// OIP-EXT-SEQ: the sequence extension (sequence_id, sequence_start,
// sequence_end on any transport) and the gRPC streaming API that Triton
// documents with it (ModelStreamInfer, decoupled models).
//
// Fixtures: stream_count (INPUT0 = n gives n responses numbered 1..n) and
// accumulate (a running sum per sequence). Responses on a stream are
// matched to requests by id, never by position.

// The probe looks for sequences themselves: a sequence of two accumulate
// requests (1 with sequence_start, then 2 with sequence_end, the same
// sequence_id) must give the running sum 3. A second answer of 2 is a
// server without sequence correlation: absent, whatever else it streams
// (MLServer answers ModelStreamInfer and has no sequences). An error
// answer (the accumulate fixture not deployed, looked for only after the
// probes, or sequence parameters refused) shows nothing, unless
// ModelStreamInfer, the streaming API the extension comes with, is
// UNIMPLEMENTED too (absent); else the probe is inconclusive and the specs
// run to find out.
var _ = RegisterProbe(specs.ExtSequence, func(ctx context.Context, p *Prober) ProbeResult {
	r := sequenceProbe(ctx, p)
	if r.Outcome != report.ProbeInconclusive || !p.Targeted(TransportGRPC) {
		return r
	}
	if s := streamProbe(ctx, p); s.Outcome == report.ProbeAbsent {
		s.Detail = r.Detail + "; " + s.Detail
		return s
	}
	return r
})

// streamProbe sends add_sub on ModelStreamInfer: absent when the RPC is
// UNIMPLEMENTED, else inconclusive (a stream shows no sequences).
func streamProbe(ctx context.Context, p *Prober) ProbeResult {
	req, _, _ := addSubPB(false)
	s := p.Stream(ctx, []*pb.ModelInferRequest{req}, StreamOptions{HalfClose: true, Until: func(s *StreamCall) bool { return len(s.Msgs) > 0 }})
	if s.Ended && status.Code(s.End) == codes.Unimplemented {
		return Absent(s, "ModelStreamInfer: %s", s.Got())
	}
	return Inconclusive(s, "ModelStreamInfer: %s", s.Got())
}

// sequenceProbe runs the two-request accumulate sequence.
func sequenceProbe(ctx context.Context, p *Prober) ProbeResult {
	const id = int64(909090) // no spec uses it
	steps := []accumulateStep{{x: 1, params: seqParams(id, true, false), want: 1}, {x: 2, params: seqParams(id, false, true), want: 3}}
	var last Evidencer
	for i, st := range steps {
		var t tensor.Tensor
		var err error
		if p.Targeted(TransportREST) {
			e := p.Post(ctx, "accumulate", "", accBody(st.x, st.params))
			last = e
			if e.Err != nil || e.Status != 200 {
				return Inconclusive(e, "accumulate with sequence parameters (not deployed?): %s", clipped(e.Got(), 160))
			}
			var r *InferResponse
			if r, err = e.AsInferResponse(); err == nil {
				t, err = r.Tensor("OUTPUT0")
			}
		} else {
			resp := &pb.ModelInferResponse{}
			c := p.Call(ctx, "ModelInfer", accPB(st.x, st.params), resp)
			last = c
			if c.Err != nil {
				return Inconclusive(c, "accumulate with sequence parameters (not deployed?): %s", c.Got())
			}
			t, err = PBOutput(resp, "OUTPUT0")
		}
		if err != nil {
			return Inconclusive(last, "accumulate answered no readable OUTPUT0: %v", err)
		}
		if err := sumErr(t, st); err != nil {
			if i == 0 {
				return Inconclusive(last, "accumulate's first answer: %v", err)
			}
			return Absent(last, "no sequence correlation: the second request of sequence %d: %v", id, err)
		}
	}
	return Observed(last, "a sequence of two accumulate requests gave the running sums 1 and 3")
}

// ----- requests -----

// pbParams converts parameters the suite wrote itself (always valid).
func pbParams(p oip.Parameters) map[string]*pb.InferParameter {
	m, err := oip.ParametersToProto(p)
	if err != nil {
		panic(fmt.Sprintf("conformance: parameters %v: %v", p, err))
	}
	return m
}

// int32Input is a [1] INT32 INPUT0.
func int32Input(x int32) tensor.Tensor {
	return tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{x}}
}

// countPB asks stream_count for n responses.
func countPB(id string, n int32, params oip.Parameters) *pb.ModelInferRequest {
	r := PBRequest("stream_count", false, int32Input(n))
	r.Id = id
	if params != nil {
		r.Parameters = pbParams(params)
	}
	return r
}

// seqParams are the sequence parameters; id nil leaves sequence_id out.
func seqParams(id any, start, end bool) oip.Parameters {
	p := oip.Parameters{}
	if id != nil {
		p["sequence_id"] = id
	}
	if start {
		p["sequence_start"] = true
	}
	if end {
		p["sequence_end"] = true
	}
	return p
}

// accPB is one accumulate request over gRPC.
func accPB(x int32, params oip.Parameters) *pb.ModelInferRequest {
	r := PBRequest("accumulate", false, int32Input(x))
	r.Parameters = pbParams(params)
	return r
}

// accBody is one accumulate request over REST.
func accBody(x int32, params oip.Parameters) Body {
	b := Request(JSONInput(int32Input(x)))
	o := Obj{}
	for k, v := range params {
		o[k] = v
	}
	b.JSON["parameters"] = o
	return b
}

// ----- reading streams -----

// oneInt reads OUTPUT0 as one INT32 value.
func oneInt(r *pb.ModelInferResponse) (int32, error) {
	t, err := PBOutput(r, "OUTPUT0")
	if err != nil {
		return 0, err
	}
	v, ok := t.Data.([]int32)
	if t.Datatype != tensor.Int32 || !ok || len(v) != 1 {
		return 0, fmt.Errorf("OUTPUT0 is %s %v, want INT32 [1]", t.Datatype, t.Shape)
	}
	return v[0], nil
}

// shapeErr says when messages follow another reading than the catalog's
// ModelStreamInferResponse (A-39: MLServer streams plain
// ModelInferResponse messages).
func shapeErr(s *StreamCall) error {
	var list []error
	for _, m := range s.Msgs {
		if m.DecodeErr != nil {
			return m.DecodeErr
		}
	}
	if shapes := s.Shapes(); slices.Contains(shapes, ShapeMLServer) {
		list = append(list, fmt.Errorf("the stream carries plain ModelInferResponse messages (MLServer's reading), not ModelStreamInferResponse{error_message, infer_response} (Triton's and OpenVINO Model Server's, the catalog's)"))
	}
	return errors.Join(list...)
}

// countsErr checks the responses of stream_count requests: want maps each
// request id to n; each id must get n responses carrying 1..n in order and
// no error_message.
func countsErr(s *StreamCall, want map[string]int32) error {
	var list []error
	by := s.ByID()
	for _, id := range slices.Sorted(maps.Keys(want)) { // a stable message
		n, msgs := want[id], by[id]
		var got []int32
		for _, m := range msgs {
			if m.Error != "" {
				list = append(list, fmt.Errorf("request %q: error_message %q", id, m.Error))
				continue
			}
			if m.Resp == nil || len(m.Resp.GetOutputs()) == 0 {
				if final, ok := m.Final(); ok && final {
					continue // an empty final response (Triton's flag only)
				}
				list = append(list, fmt.Errorf("request %q: a response without outputs that is not an empty final response", id))
				continue
			}
			k, err := oneInt(m.Resp)
			if err != nil {
				list = append(list, fmt.Errorf("request %q: %v", id, err))
				continue
			}
			got = append(got, k)
		}
		var seq []int32
		for k := int32(1); k <= n; k++ {
			seq = append(seq, fixture.StreamCountOutput(k).Data.([]int32)[0])
		}
		if !slices.Equal(got, seq) {
			list = append(list, fmt.Errorf("request %q (n = %d): responses carry %v, want %v", id, n, got, seq))
		}
	}
	return errors.Join(list...)
}

// idsErr checks that every response names one of the requests sent.
func idsErr(s *StreamCall) error {
	var sent []string
	for _, r := range s.Sent {
		sent = append(sent, r.GetId())
	}
	var list []error
	for _, m := range s.Msgs {
		if m.Resp == nil {
			if m.Error == "" {
				list = append(list, errors.New("a message with neither error_message nor infer_response"))
			}
			continue
		}
		if !slices.Contains(sent, m.Resp.GetId()) {
			list = append(list, fmt.Errorf("a response has id %q, which no request sent (ids sent: %q)", m.Resp.GetId(), sent))
		}
	}
	return errors.Join(list...)
}

// streamReadErr checks what reading a stream's responses by request needs
// (OIP-EXT-SEQ-006): responses name their requests, and the stream ended
// with OK; the values are checked only then, so that a stream that fails
// it does not fail the fixture's requirement too.
func streamReadErr(s *StreamCall) error { return errors.Join(idsErr(s), endedOKErr(s)) }

// misattributedErr finds responses that carry another request's id: the
// stream holds as many value-carrying responses as the requests asked for
// in all, but not as many under each request's id (MLServer answers every
// request of a stream with the first request's id). That is one defect,
// the ids (OIP-EXT-SEQ-006); the values cannot be read by request then.
func misattributedErr(s *StreamCall, want map[string]int32) error {
	total, perID := int32(0), map[string]int32{}
	for _, m := range s.Msgs {
		if m.Resp != nil && len(m.Resp.GetOutputs()) > 0 {
			total++
			perID[m.Resp.GetId()]++
		}
	}
	var sum int32
	var wrong []string
	for _, id := range slices.Sorted(maps.Keys(want)) {
		sum += want[id]
		if perID[id] != want[id] {
			wrong = append(wrong, fmt.Sprintf("%q %d (asked for %d)", id, perID[id], want[id]))
		}
	}
	if total != sum || len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("the stream carries the %d responses its requests asked for, but not under their ids: responses per id %s", total, strings.Join(wrong, ", "))
}

// endedOKErr checks that the server ended a half-closed stream with OK.
func endedOKErr(s *StreamCall) error {
	switch {
	case !s.Ended:
		return fmt.Errorf("the stream was still open after the client half-closed it and every request was sent (%s)", s.Got())
	case s.End != nil:
		return fmt.Errorf("the stream ended with a non-OK status after the client half-closed it: %s", s.Got())
	}
	return nil
}

// flags reports whether the server sends triton_final_response on any
// response of the stream (Triton's protocol; MLServer sends none).
func flags(s *StreamCall) bool {
	return slices.ContainsFunc(s.Msgs, func(m StreamMessage) bool { _, ok := m.Final(); return ok })
}

// finalFlagErr checks triton_final_response where a server sends it: no
// response of a request follows one flagged true. The last response need
// not be flagged unless the request asked for the empty final response
// (askedFinal): Triton flags a response final only when the model sends
// its final flag with it, and sends a final response of its own only on
// request, so a last response flagged false is Triton's answer to a model
// that completes after its last response. When asked, the last message
// of every request carries true (an empty final response, or the last
// response flagged).
func finalFlagErr(s *StreamCall, askedFinal bool) error {
	if !flags(s) {
		return nil
	}
	by := s.ByID()
	var list []error
	for _, id := range slices.Sorted(maps.Keys(by)) {
		msgs := by[id]
		for i, m := range msgs {
			if m.Error != "" {
				continue
			}
			final, ok := m.Final()
			last := i == len(msgs)-1
			switch {
			case final && !last:
				list = append(list, fmt.Errorf("request %q: response %d of %d has %s = true, and more follow", id, i+1, len(msgs), oip.ParamTritonFinalResponse))
			case askedFinal && last && !final:
				list = append(list, fmt.Errorf("request %q asked for %s: its last message (%d of %d) has %s %v (present %v), want true", id, oip.ParamTritonEnableEmptyFinalResponse, i+1, len(msgs), oip.ParamTritonFinalResponse, final, ok))
			}
		}
	}
	return errors.Join(list...)
}

// ----- specs -----

var _ = Describe("gRPC streaming (ModelStreamInfer)", Over(TransportGRPC), Needs(specs.ExtSequence), func() {
	It("advertises sequence in server metadata", Req("OIP-EXT-SEQ-001"), func(ctx SpecContext) {
		_, c := Invoke(ctx, "ServerMetadata", &pb.ServerMetadataRequest{}, Stub().ServerMetadata)
		Verify(c).To(PassCheck(func(m *pb.ServerMetadataResponse) error {
			return advertisedErr(m.GetExtensions(), specs.ExtSequence)
		}))
	})

	It("answers three requests on one stream with responses whose ids match, and ends the stream with OK after the client half-closes", Req("OIP-EXT-SEQ-006"), func(ctx SpecContext) {
		NeedFixture("stream_count")
		s := StreamInfer(ctx, []*pb.ModelInferRequest{countPB("a", 1, nil), countPB("b", 1, nil), countPB("c", 1, nil)}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		Verify(s).Soft("A-39").To(PassCheck(shapeErr))
		Verify(s).To(PassCheck(func(s *StreamCall) error {
			return errors.Join(idsErr(s), countsErr(s, map[string]int32{"a": 1, "b": 1, "c": 1}))
		}))
		Verify(s).To(PassCheck(endedOKErr))
	})

	// The values are the fixture contract's (stream_count: n responses
	// carrying 1..n in order), so a wrong count or value is a broken
	// contract (OIP-EXT-SEQ-010); the responses are read by id, so a stream
	// whose ids do not match its requests fails OIP-EXT-SEQ-006 only.
	It("matches every response of interleaved decoupled requests to its request by id, each with the fixture's values in order", Req("OIP-EXT-SEQ-006", "OIP-EXT-SEQ-010"), func(ctx SpecContext) {
		NeedFixture("stream_count")
		s := StreamInfer(ctx, []*pb.ModelInferRequest{countPB("x", 3, nil), countPB("y", 2, nil)}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		if !VerifyReq("OIP-EXT-SEQ-006", s).To(PassCheck(func(s *StreamCall) error {
			return errors.Join(streamReadErr(s), misattributedErr(s, map[string]int32{"x": 3, "y": 2}))
		})) {
			return
		}
		VerifyReq("OIP-EXT-SEQ-010", s).To(PassCheck(func(s *StreamCall) error {
			return errors.Join(countsErr(s, map[string]int32{"x": 3, "y": 2}), finalFlagErr(s, false))
		}))
	})

	It("answers exactly 0, 1 and 3 responses for decoupled requests asking for that many, flagging the last as final", Req("OIP-EXT-SEQ-006", "OIP-EXT-SEQ-010"), func(ctx SpecContext) {
		NeedFixture("stream_count")
		s := StreamInfer(ctx, []*pb.ModelInferRequest{countPB("n0", 0, nil), countPB("n1", 1, nil), countPB("n3", 3, nil)}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		if !VerifyReq("OIP-EXT-SEQ-006", s).To(PassCheck(func(s *StreamCall) error {
			return errors.Join(streamReadErr(s), misattributedErr(s, map[string]int32{"n0": 0, "n1": 1, "n3": 3}))
		})) {
			return
		}
		VerifyReq("OIP-EXT-SEQ-010", s).To(PassCheck(func(s *StreamCall) error {
			err := countsErr(s, map[string]int32{"n0": 0, "n1": 1, "n3": 3})
			if n := len(s.ByID()["n0"]); n > 0 {
				err = errors.Join(err, fmt.Errorf("n = 0 without %s got %d message(s), want none", oip.ParamTritonEnableEmptyFinalResponse, n))
			}
			return errors.Join(err, finalFlagErr(s, false))
		}))
	})

	// Where the protocol puts the end of a request: Triton's empty final
	// response, asked for with triton_enable_empty_final_response. A server
	// that flags responses (Triton's protocol) is held to it under the
	// fixture's requirement; one that flags none (MLServer) only gets the
	// implementation note's warning.
	It("sends an empty final response for a request that asks for one", Req("OIP-EXT-SEQ-006", "OIP-EXT-SEQ-009", "OIP-EXT-SEQ-010"), func(ctx SpecContext) {
		NeedFixture("stream_count")
		on := oip.Parameters{oip.ParamTritonEnableEmptyFinalResponse: true}
		s := StreamInfer(ctx, []*pb.ModelInferRequest{countPB("e0", 0, on), countPB("e2", 2, on)}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		if !VerifyReq("OIP-EXT-SEQ-006", s).To(PassCheck(func(s *StreamCall) error {
			return errors.Join(streamReadErr(s), misattributedErr(s, map[string]int32{"e0": 0, "e2": 2}))
		})) {
			return
		}
		if !flags(s) {
			VerifyReq("OIP-EXT-SEQ-009", s).To(PassCheck(func(s *StreamCall) error {
				return fmt.Errorf("no response carries %s, though the requests asked for %s (%s)", oip.ParamTritonFinalResponse, oip.ParamTritonEnableEmptyFinalResponse, s.Got())
			}))
		}
		VerifyReq("OIP-EXT-SEQ-010", s).To(PassCheck(func(s *StreamCall) error {
			var list []error
			if e0 := s.ByID()["e0"]; flags(s) && len(e0) != 1 {
				list = append(list, fmt.Errorf("n = 0 with %s: %d message(s), want one empty final response", oip.ParamTritonEnableEmptyFinalResponse, len(e0)))
			}
			return errors.Join(append(list, countsErr(s, map[string]int32{"e0": 0, "e2": 2}), finalFlagErr(s, true))...)
		}))
	})

	It("answers a non-sequence add_sub request on the stream", Req("OIP-EXT-SEQ-007"), func(ctx SpecContext) {
		NeedFixture("add_sub")
		req, out0, out1 := addSubPB(false)
		req.Id = "as"
		s := StreamInfer(ctx, []*pb.ModelInferRequest{req}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		Verify(s).To(PassCheck(func(s *StreamCall) error {
			for _, m := range s.ByID()["as"] {
				if m.Error != "" {
					return fmt.Errorf("add_sub on the stream: error_message %q", m.Error)
				}
				var list []error
				for _, want := range []tensor.Tensor{out0, out1} {
					got, err := PBOutput(m.Resp, want.Name)
					if err == nil {
						err = CompareTensor(want, got)
					}
					if err != nil {
						list = append(list, err)
					}
				}
				return errors.Join(list...)
			}
			return fmt.Errorf("no response with id \"as\" (%s)", s.Got())
		}))
	})

	It("reports a failed request in error_message and keeps the stream usable", Req("OIP-EXT-SEQ-008"), func(ctx SpecContext) {
		NeedFixture("stream_count")
		bad := countPB("bad", 1, nil)
		bad.ModelName = "does_not_exist"
		s := StreamInfer(ctx, []*pb.ModelInferRequest{bad, countPB("after", 1, nil)}, StreamOptions{HalfClose: true})
		if !Answered(s) {
			return
		}
		Verify(s).To(PassCheck(func(s *StreamCall) error {
			var list []error
			if !slices.ContainsFunc(s.Msgs, func(m StreamMessage) bool { return strings.TrimSpace(m.Error) != "" }) {
				list = append(list, fmt.Errorf("no message carries an error_message for the request to an unknown model (%s)", s.Got()))
			}
			return errors.Join(append(list, countsErr(s, map[string]int32{"after": 1}), endedOKErr(s))...)
		}))
	})
})

// accumulateStep is one request of a sequence and the sum it must give.
type accumulateStep struct {
	x      int32
	params oip.Parameters
	want   int32
}

// sequenceSteps are two interleaved sequences a and b, each step with the
// sum the fixture oracle computes for it.
func sequenceSteps(a, b any) []accumulateStep {
	steps := []accumulateStep{
		{x: 1, params: seqParams(a, true, false)},
		{x: 10, params: seqParams(b, true, false)},
		{x: 2, params: seqParams(a, false, false)},
		{x: 20, params: seqParams(b, false, false)},
		{x: 3, params: seqParams(a, false, true)},
		{x: 30, params: seqParams(b, false, true)},
	}
	sums := map[any]int32{}
	for i, st := range steps {
		id := st.params["sequence_id"]
		if st.params["sequence_start"] == true {
			sums[id] = 0
		}
		_, next, err := fixture.AccumulateOutput(sums[id], int32Input(st.x))
		if err != nil {
			panic(fmt.Sprintf("conformance: fixture oracle: %v", err))
		}
		sums[id], steps[i].want = next, next
	}
	return steps
}

// restartSteps are a sequence on id restarted (sequence_start again, no
// sequence_end before it) and then ended, each step with the sum the fixture
// oracle gives: the restart starts the sum at 0 again.
func restartSteps(id int64) []accumulateStep {
	steps := []accumulateStep{
		{x: 5, params: seqParams(id, true, false)},
		{x: 6, params: seqParams(id, false, false)},
		{x: 2, params: seqParams(id, true, false)},
		{x: 3, params: seqParams(id, false, true)},
	}
	var sum int32
	for i, st := range steps {
		if st.params["sequence_start"] == true {
			sum = 0
		}
		_, next, err := fixture.AccumulateOutput(sum, int32Input(st.x))
		if err != nil {
			panic(fmt.Sprintf("conformance: fixture oracle: %v", err))
		}
		sum, steps[i].want = next, next
	}
	return steps
}

// refusedFirst sends the first step of a sequence the server need not
// support: a refusal is checked as one (a client error, never a 5xx) and
// reported true; a success must carry the step's sum.
func refusedFirst(ctx context.Context, tr Transport, st accumulateStep) bool {
	if tr == TransportREST {
		e := Post(ctx, "accumulate", "", accBody(st.x, st.params))
		if e.Err == nil && e.Status != http.StatusOK {
			Verify(e).To(BeRejected())
			return true
		}
		return !Verify(e).To(PassCheck(func(r *InferResponse) error {
			t, err := r.Tensor("OUTPUT0")
			if err != nil {
				return err
			}
			return sumErr(t, st)
		}))
	}
	r, c := Infer(ctx, accPB(st.x, st.params))
	if c.Err != nil && GRPCNoAnswer(c.Err) == nil {
		Verify(c).To(BeRejected())
		return true
	}
	return !Verify(c).To(PassCheck(func(*pb.ModelInferResponse) error {
		t, err := PBOutput(r, "OUTPUT0")
		if err != nil {
			return err
		}
		return sumErr(t, st)
	}))
}

// runSteps sends steps in order over tr and checks each sum under the spec's
// requirement.
func runSteps(ctx context.Context, tr Transport, steps []accumulateStep) {
	runStepsAs(ctx, tr, "", steps)
}

// runStepsAs is runSteps with the checks under req ("" in a spec with one
// requirement, as verifyAs); it reports whether every step passed.
func runStepsAs(ctx context.Context, tr Transport, req string, steps []accumulateStep) bool {
	for _, st := range steps {
		if tr == TransportREST {
			e := Post(ctx, "accumulate", "", accBody(st.x, st.params))
			if !verifyAs(req, e).To(PassCheck(func(r *InferResponse) error {
				t, err := r.Tensor("OUTPUT0")
				if err != nil {
					return err
				}
				return sumErr(t, st)
			})) {
				return false
			}
			continue
		}
		_, c := Infer(ctx, accPB(st.x, st.params))
		if !verifyAs(req, c).To(PassCheck(func(r *pb.ModelInferResponse) error {
			t, err := PBOutput(r, "OUTPUT0")
			if err != nil {
				return err
			}
			return sumErr(t, st)
		})) {
			return false
		}
	}
	return true
}

func sumErr(t tensor.Tensor, st accumulateStep) error {
	v, ok := t.Data.([]int32)
	if !ok || len(v) != 1 {
		return fmt.Errorf("OUTPUT0 is %s %v, want INT32 [1]", t.Datatype, t.Shape)
	}
	if v[0] != st.want {
		return fmt.Errorf("after adding %d with %v the sum is %d, want %d", st.x, st.params, v[0], st.want)
	}
	return nil
}

// sequenceSpecs are the sequence specs over tr; ids differ per transport
// so that the two never share a sequence.
//
// Integer ids go out as int64 parameters: the catalog's sequence_id is a
// uint64 value, and Triton reads it from int64_param (as every stock client
// sends it); uint64_param is a kind some servers refuse (OIP-GRPC-PARAM).
func sequenceSpecs(tr Transport, base int64) {
	It("keeps a running state per sequence_id from sequence_start to sequence_end", Req("OIP-EXT-SEQ-002"), func(ctx SpecContext) {
		NeedFixture("accumulate")
		steps := sequenceSteps(base+42, nil)
		runSteps(ctx, tr, []accumulateStep{steps[0], steps[2], steps[4]})
	})

	// A string id is a sub-feature: advertised, it must work; not
	// advertised, the server may refuse it (a client error) or keep the
	// sequence all the same, but a 5xx or a wrong sum is a failure either
	// way.
	It("keeps a sequence under a string sequence_id, or refuses it with a client error when it does not advertise sequence(string_id)", Req("OIP-EXT-SEQ-002"), func(ctx SpecContext) {
		NeedFixture("accumulate")
		steps := sequenceSteps(fmt.Sprintf("oipkit-%s-%d", tr, base), nil)
		steps = []accumulateStep{steps[0], steps[2], steps[4]}
		if !AdvertisesCapability(specs.ExtSequence, specs.CapabilityStringID) {
			AfterNegative()
			if refusedFirst(ctx, tr, steps[0]) {
				return
			}
			steps = steps[1:]
		}
		runSteps(ctx, tr, steps)
	})

	// The sums before the restart are OIP-EXT-SEQ-002's (a sequence keeps
	// its state); only the restart itself is OIP-EXT-SEQ-011's.
	It("restarts the state when sequence_start comes again on a sequence_id still open", Req("OIP-EXT-SEQ-002", "OIP-EXT-SEQ-011"), func(ctx SpecContext) {
		NeedFixture("accumulate")
		steps := restartSteps(base + 7)
		if runStepsAs(ctx, tr, "OIP-EXT-SEQ-002", steps[:2]) {
			runStepsAs(ctx, tr, "OIP-EXT-SEQ-011", steps[2:])
		}
	})

	It("keeps interleaved sequences with different ids independent", Req("OIP-EXT-SEQ-005"), func(ctx SpecContext) {
		NeedFixture("accumulate")
		runSteps(ctx, tr, sequenceSteps(base+1, base+2))
	})

	for _, c := range []struct {
		text, req string
		params    oip.Parameters
	}{
		{"sequence_start without a sequence_id", "OIP-EXT-SEQ-003", seqParams(nil, true, false)},
		{"sequence_start with sequence_id 0", "OIP-EXT-SEQ-003", seqParams(int64(0), true, false)},
		{"sequence_end without a sequence_id", "OIP-EXT-SEQ-004", seqParams(nil, false, true)},
		{"sequence_end with sequence_id 0", "OIP-EXT-SEQ-004", seqParams(int64(0), false, true)},
	} {
		It("rejects "+c.text, Req(c.req), func(ctx SpecContext) {
			NeedFixture("accumulate")
			AfterNegative()
			if tr == TransportREST {
				Verify(Post(ctx, "accumulate", "", accBody(1, c.params))).To(BeRejected())
				return
			}
			_, call := Infer(ctx, accPB(1, c.params))
			Verify(call).To(BeRejected())
		})
	}
}

var _ = Describe("REST sequences", Over(TransportREST), Needs(specs.ExtSequence), func() {
	It("advertises sequence in server metadata", Req("OIP-EXT-SEQ-001"), func(ctx SpecContext) {
		Verify(Get(ctx, "/v2")).To(PassCheck(func(o *Object) error {
			skipUnknownSupport(specs.ExtSequence)
			exts, err := extensionsField(o.Members)
			if err != nil {
				return err
			}
			return advertisedErr(exts, specs.ExtSequence)
		}))
	})
	sequenceSpecs(TransportREST, 1000)
})

var _ = Describe("gRPC sequences", Over(TransportGRPC), Needs(specs.ExtSequence), func() {
	sequenceSpecs(TransportGRPC, 2000)
})
