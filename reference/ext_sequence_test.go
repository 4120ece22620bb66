package reference_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// accRequest is one accumulate request.
func accRequest(x int32, params oip.Parameters) *inferencepb.ModelInferRequest {
	pb, err := oip.ToProtoRequest(&oip.InferRequest{Parameters: params, Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{x}}},
	}}, false)
	if err != nil {
		panic(err)
	}
	pb.ModelName = "accumulate"
	return pb
}

func seq(id any, start, end bool) oip.Parameters {
	p := oip.Parameters{"sequence_id": id}
	if start {
		p["sequence_start"] = true
	}
	if end {
		p["sequence_end"] = true
	}
	return p
}

func TestSequencesOverGRPC(t *testing.T) {
	srv := referencetest.Start(t)
	c := dial(t, srv.GRPCAddr())
	ctx := ctxT(t)
	sum := func(x int32, p oip.Parameters) int32 {
		t.Helper()
		r, err := c.ModelInfer(ctx, accRequest(x, p))
		if err != nil {
			t.Fatalf("accumulate %d %v: %v", x, p, err)
		}
		resp, err := oip.FromProtoResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Outputs[0].Data.([]int32)[0]
	}
	// Two interleaved sequences, one with a uint64 id, one with a string id.
	if got := sum(1, seq(uint64(42), true, false)); got != 1 {
		t.Fatalf("start: %d", got)
	}
	if got := sum(10, seq("abc", true, false)); got != 10 {
		t.Fatalf("string start: %d", got)
	}
	if got := sum(2, seq(uint64(42), false, false)); got != 3 {
		t.Fatalf("second: %d", got)
	}
	if got := sum(5, seq("abc", false, true)); got != 15 {
		t.Fatalf("string end: %d", got)
	}
	if got := sum(3, seq(int64(42), false, true)); got != 6 {
		t.Fatalf("end: %d", got)
	}
	// Ended: not live any more.
	_, err := c.ModelInfer(ctx, accRequest(1, seq(uint64(42), false, false)))
	wantCode(t, err, codes.InvalidArgument, "not live", "sequence_start")
	// Flags without an id, or id 0.
	_, err = c.ModelInfer(ctx, accRequest(1, oip.Parameters{"sequence_start": true}))
	wantCode(t, err, codes.InvalidArgument, "sequence_id")
	_, err = c.ModelInfer(ctx, accRequest(1, seq(uint64(0), false, true)))
	wantCode(t, err, codes.InvalidArgument, "sequence_id")
	// No sequence at all.
	_, err = c.ModelInfer(ctx, accRequest(1, nil))
	wantCode(t, err, codes.InvalidArgument, "stateful")
}

func TestSequencesOverREST(t *testing.T) {
	srv := referencetest.Start(t)
	url := srv.HTTPURL() + "/v2/models/accumulate/infer"
	body := func(x int, params string) string {
		return `{"parameters":` + params + `,"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[` + string(rune('0'+x)) + `]}]}`
	}
	var out struct {
		Outputs []struct{ Data []int32 } `json:"outputs"`
	}
	wantJSON(t, post(t, url, body(4, `{"sequence_id":7,"sequence_start":true}`)), 200, &out)
	wantJSON(t, post(t, url, body(5, `{"sequence_id":7,"sequence_end":true}`)), 200, &out)
	if out.Outputs[0].Data[0] != 9 {
		t.Fatalf("sum %v, want 9", out.Outputs)
	}
	wantError(t, post(t, url, body(1, `{"sequence_id":7}`)), 400, "not live")
}

func TestSequenceLimits(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) {
		c.MaxSequences = 1
		c.SequenceIdleTimeout = 200 * time.Millisecond
	})
	c := dial(t, srv.GRPCAddr())
	ctx := ctxT(t)
	if _, err := c.ModelInfer(ctx, accRequest(1, seq("a", true, false))); err != nil {
		t.Fatal(err)
	}
	_, err := c.ModelInfer(ctx, accRequest(1, seq("b", true, false)))
	wantCode(t, err, codes.ResourceExhausted, "--max-sequences")
	time.Sleep(300 * time.Millisecond)
	// "a" expired: its slot is free, and it is not live any more.
	_, err = c.ModelInfer(ctx, accRequest(1, seq("a", false, false)))
	wantCode(t, err, codes.InvalidArgument, "not live")
	if _, err := c.ModelInfer(ctx, accRequest(1, seq("b", true, false))); err != nil {
		t.Fatalf("start after expiry: %v", err)
	}
}

func TestSequenceOnStream(t *testing.T) {
	srv := referencetest.Start(t)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// One request at a time: the stream does not promise order between
	// concurrent requests of a sequence.
	for i, p := range []oip.Parameters{seq(uint64(9), true, false), seq(uint64(9), false, false), seq(uint64(9), false, true)} {
		if err := st.Send(accRequest(int32(i+1), p)); err != nil {
			t.Fatal(err)
		}
		m, err := st.Recv()
		if err != nil || m.GetErrorMessage() != "" {
			t.Fatalf("%v %q", err, m.GetErrorMessage())
		}
		resp, _ := oip.FromProtoResponse(m.GetInferResponse())
		if got, want := resp.Outputs[0].Data.([]int32)[0], []int32{1, 3, 6}[i]; got != want {
			t.Fatalf("request %d: sum %d, want %d", i, got, want)
		}
	}
	st.CloseSend()
	if _, err := st.Recv(); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("after half-close: %v", err)
	}
}
