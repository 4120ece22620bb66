package oiptarget

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/oipkit/oipkit/loadgen"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Sampled answer checks. Every answer's framing and status are checked as it
// is read (client.PreparedInfer, client.PreparedGRPCInfer); besides, the
// first answer a target receives and then every CheckEvery-th is decoded in
// full with the project's codec and checked against the model's metadata
// ([checkAnswer]), so a server that answers 200 with something that is not
// an inference response fails requests instead of being counted ok.
//
// The rule counts answers per target (an atomic counter), not request
// sequence numbers: a segment of a split test sends every N-th sequence
// number, and a rule on those could miss all of one segment's answers.
//
// Its cost: an answer not sampled allocates nothing more and is not read
// beyond its framing (TestHotPathAllocs); a sampled answer is kept (bounded
// by [sampleKeep]) and decoded, 3–7 µs of CPU (BenchmarkSampledCheck).

// DefaultCheckEvery is the default InputConfig.CheckEvery. At 32 a run
// against a server whose every answer is garbage has 3.1% of its requests
// failed, well above the default failed-request bound of 1% (at 64, 1.6%
// would be near it), while the samples add about 2% to the generator's CPU
// per REST JSON request and under 1% per gRPC request.
const DefaultCheckEvery = 32

// normalizeCheckEvery fills in the default sample rule and checks it.
func normalizeCheckEvery(in *loadgen.InputConfig) error {
	if in.CheckEvery == nil {
		v := DefaultCheckEvery
		in.CheckEvery = &v
	} else if *in.CheckEvery < 0 {
		return configErr("Inputs.CheckEvery must be 0 (no sampled checks) or more, got %d", *in.CheckEvery)
	}
	return nil
}

// sampled reports whether the answer about to be received is checked in
// full: always with Inputs.Validate, never with CheckEvery 0, else the first
// answer and every CheckEvery-th after it.
func (t *OIPTarget) sampled() bool {
	switch t.checkEvery {
	case 0:
		return false
	case 1:
		return true
	}
	return (t.answers.n.Add(1)-1)%t.checkEvery == 0
}

// answerCount is the target's count of answers, alone on its cache line:
// every worker adds to it, and it should not evict the target's read-only
// fields from the other cores' caches.
type answerCount struct {
	_ [64]byte
	n atomic.Uint64
	_ [56]byte
}

// sampleKeep is the largest REST answer kept to check it when the outputs
// are not known in advance (no Inputs.Validate): 16 times an estimate of the
// answer — the request's size plus 32 bytes of JSON per output element the
// metadata shapes give, a variable dimension counted as 1 — plus 1 MiB. A
// larger answer fails the sampled request ("too large to check") rather than
// being buffered.
func sampleKeep(outputs []oip.TensorMetadata, requestBytes int) int64 {
	const most = 1 << 40 // beyond any client cap; keeps the sums from overflowing
	est := int64(requestBytes)
	for _, o := range outputs {
		n := int64(32)
		for _, d := range o.Shape {
			if d > 1 {
				n = min(most, mulCapped(n, d, most))
			}
		}
		est = min(most, est+n)
	}
	return 16*est + 1<<20
}

// mulCapped is a*b for positive a and b, or most when that is larger.
func mulCapped(a, b, most int64) int64 {
	if a > most/b {
		return most
	}
	return a * b
}

// notInference is the error of a sampled answer that does not decode as an
// inference response.
func notInference(format string, args ...any) error {
	return &loadgen.ValidationError{Detail: "not an inference response: " + fmt.Sprintf(format, args...)}
}

// decodeGRPCAnswer decodes a kept ModelInferResponse message.
func decodeGRPCAnswer(b []byte) (*oip.InferResponse, error) {
	var pb inferencepb.ModelInferResponse
	if err := proto.Unmarshal(b, &pb); err != nil {
		return nil, notInference("decode ModelInferResponse (%d bytes): %v", len(b), err)
	}
	r, err := oip.FromProtoResponse(&pb)
	if err != nil {
		return nil, notInference("%v", err)
	}
	return r, nil
}

// checkAnswer checks a decoded answer against the model's metadata: every
// output the metadata lists is present (the load generator's requests name
// no outputs, or all of them with shared memory, so the server returns them
// all), and every output present is one the metadata lists, with its
// datatype and a shape of the same rank whose dimensions match (-1 matches
// any). The codec has already checked each output's element count against
// the data that came (or that it is in shared memory, with no data). A model
// whose metadata lists no outputs is checked for decoding only.
func checkAnswer(outputs []oip.TensorMetadata, r *oip.InferResponse) error {
	if len(outputs) == 0 {
		return nil
	}
	for _, o := range r.Outputs {
		i := slices.IndexFunc(outputs, func(m oip.TensorMetadata) bool { return m.Name == o.Name })
		if i < 0 {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %.64q is not one of the model's outputs (%s)", o.Name, outputNames(outputs))}
		}
		m := outputs[i]
		if m.Datatype != "" && o.Datatype != m.Datatype {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q: datatype %s, the model's metadata says %s", o.Name, o.Datatype, m.Datatype)}
		}
		if !shapeFits(o.Shape, m.Shape) {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q: shape %s does not fit the model's %v", o.Name, shapeText(o.Shape), m.Shape)}
		}
	}
	for _, m := range outputs {
		if _, ok := r.Output(m.Name); !ok {
			return &loadgen.ValidationError{Detail: fmt.Sprintf("output %q missing (the request asks for every output; the answer has %d)", m.Name, len(r.Outputs))}
		}
	}
	return nil
}

// shapeFits reports whether shape is an instance of the metadata shape
// meta, where -1 stands for any size.
func shapeFits(shape, meta []int64) bool {
	if len(shape) != len(meta) {
		return false
	}
	for i, d := range meta {
		if d != -1 && shape[i] != d {
			return false
		}
	}
	return true
}

// shapeText prints a shape, cut short when a hostile answer makes it long.
func shapeText(shape []int64) string {
	if len(shape) <= 8 {
		return fmt.Sprint(shape)
	}
	return fmt.Sprintf("%v (%d dimensions)", shape[:8], len(shape))
}

func outputNames(outputs []oip.TensorMetadata) string {
	names := make([]string, len(outputs))
	for i, o := range outputs {
		names[i] = o.Name
	}
	return strings.Join(names, ", ")
}
