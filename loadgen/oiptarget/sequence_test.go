package oiptarget

import (
	"testing"

	"github.com/oipkit/oipkit/loadgen"
	"github.com/oipkit/oipkit/loadgen/loadgentest"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

func TestAppendSequenceParams(t *testing.T) {
	base, err := proto.Marshal(&inferencepb.ModelInferRequest{ModelName: "accumulate", Parameters: map[string]*inferencepb.InferParameter{
		"sequence_end": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
		"other":        {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 7}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := appendSequenceParams(append([]byte(nil), base...), loadgen.SequenceStep{ID: 1 << 40, Start: true})
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
		mod  func(*loadgen.Config)
	}{
		{"closed unary", func(c *loadgen.Config) { c.Load.Concurrency = 3 }},
		{"closed stream", func(c *loadgen.Config) { c.Load.Concurrency = 3; c.Streaming = &loadgen.StreamConfig{} }},
		{"open stream", func(c *loadgen.Config) {
			c.Load.Rate = loadgentest.Rate("500")
			c.Sequence.Sequences = 3
			c.Streaming = &loadgen.StreamConfig{}
		}},
		{"rest unary", func(c *loadgen.Config) {
			c.Target = loadgen.TargetConfig{HTTP: srv.HTTPURL(), Model: "accumulate"}
			c.Load.Concurrency = 2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := grpcConfig(srv.GRPCAddr(), "accumulate")
			cfg.Inputs.File = input
			cfg.Sequence = &loadgen.SequenceConfig{Length: 4}
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
	// Six sequences live at once on a server that holds three: the fourth
	// start is refused. An open loop is used because it hands its first
	// six requests to six distinct sequences whatever the timing; a closed
	// loop of six workers may spend a small budget on its first three
	// before the others start.
	cfg := grpcConfig(srv.GRPCAddr(), "accumulate")
	cfg.Inputs.File = input
	cfg.Sequence = &loadgen.SequenceConfig{Length: 1000, Sequences: 6}
	cfg.Load.Rate, cfg.Load.Requests = loadgentest.Rate("500"), 12
	if res := runConfig(t, cfg); res.Counts.Errors == 0 {
		t.Errorf("six sequences live on a server that holds three: no error (%+v)", res.Counts)
	}
}
