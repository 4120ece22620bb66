package loadgen

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

func TestSequenceSteps(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range 2 {
		s := newSequences(SequenceConfig{Length: 3, IDStart: 1}, Segment{Index: i, Count: 2}, false)
		var st sequenceState
		for k := range 9 {
			step := s.step(&st)
			if step.Start != (k%3 == 0) || step.End != (k%3 == 2) {
				t.Errorf("segment %d request %d: %+v", i, k, step)
			}
			if step.Start {
				if seen[step.ID] || step.ID == 0 {
					t.Errorf("sequence id %d reused or zero", step.ID)
				}
				seen[step.ID] = true
			}
		}
	}
	one := newSequences(SequenceConfig{Length: 1, IDStart: 1}, Segment{Count: 1}, false)
	if st := one.step(&sequenceState{}); !st.Start || !st.End {
		t.Errorf("a sequence of one: %+v", st)
	}
}

func TestAppendSequenceParams(t *testing.T) {
	base, err := proto.Marshal(&inferencepb.ModelInferRequest{ModelName: "accumulate", Parameters: map[string]*inferencepb.InferParameter{
		"sequence_end": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
		"other":        {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 7}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := appendSequenceParams(append([]byte(nil), base...), SequenceStep{ID: 1 << 40, Start: true})
	b = appendRequestID(b, []byte("42"))
	var req inferencepb.ModelInferRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	p := req.GetParameters()
	if req.GetId() != "42" || p["sequence_id"].GetInt64Param() != 1<<40 || !p["sequence_start"].GetBoolParam() ||
		p["sequence_end"].GetBoolParam() || p["other"].GetInt64Param() != 7 {
		t.Errorf("decoded %v", &req)
	}
}

// TestSequencesAccumulate runs sequences against the accumulate fixture on
// a server that holds at most as many live sequences as the run keeps:
// a missing sequence_end would leave sequences live and the next starts
// would be refused, a missing sequence_start would be refused at once.
func TestSequencesAccumulate(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxSequences = 3 })
	input := tokensInput(t, 2)
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"closed unary", func(c *Config) { c.Load.Concurrency = 3 }},
		{"closed stream", func(c *Config) { c.Load.Concurrency = 3; c.Streaming = &StreamConfig{} }},
		{"open stream", func(c *Config) {
			c.Load.Rate = "500"
			c.Sequence.Sequences = 3
			c.Streaming = &StreamConfig{}
		}},
		{"rest unary", func(c *Config) {
			c.Target = TargetConfig{HTTP: srv.HTTPURL(), Model: "accumulate"}
			c.Load.Concurrency = 2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := grpcConfig(srv.GRPCAddr(), "accumulate")
			cfg.Inputs.File = input
			cfg.Sequence = &SequenceConfig{Length: 4}
			cfg.Load.Requests = 60
			c.mod(&cfg)
			res := runConfig(t, cfg)
			if res.Counts.OK != 60 {
				t.Fatalf("counts %+v, errors %v %v", res.Counts, res.Errors, res.ErrorSamples)
			}
			if cfg.Streaming != nil && res.Counts.Responses != 60 {
				t.Errorf("responses %d, want one per request", res.Counts.Responses)
			}
		})
	}
	// Without sequence_end the server's three live sequences run out.
	cfg := grpcConfig(srv.GRPCAddr(), "accumulate")
	cfg.Inputs.File = input
	cfg.Sequence = &SequenceConfig{Length: 1000}
	cfg.Load.Concurrency, cfg.Load.Requests = 6, 12
	if res := runConfig(t, cfg); res.Counts.Errors == 0 {
		t.Errorf("six sequences live on a server that holds three: no error (%+v)", res.Counts)
	}
}
