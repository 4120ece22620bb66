package reference_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
	"github.com/oipkit/oipkit/tensor"
)

// countRequest asks stream_count (or tokens) for n responses.
func countRequest(model, id string, n int32, params oip.Parameters) *inferencepb.ModelInferRequest {
	pb, err := oip.ToProtoRequest(&oip.InferRequest{Parameters: params, Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{n}}},
	}}, false)
	if err != nil {
		panic(err)
	}
	pb.ModelName, pb.Id = model, id
	return pb
}

// recvAll reads a stream to its end.
func recvAll(t *testing.T, st inferencepb.GRPCInferenceService_ModelStreamInferClient) ([]*inferencepb.ModelStreamInferResponse, error) {
	t.Helper()
	var got []*inferencepb.ModelStreamInferResponse
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
}

func finalOf(r *inferencepb.ModelInferResponse) (final, ok bool) {
	p, ok := r.GetParameters()[oip.ParamTritonFinalResponse]
	if !ok {
		return false, false
	}
	b, ok := p.GetParameterChoice().(*inferencepb.InferParameter_BoolParam)
	return ok && b.BoolParam, ok
}

func TestStreamCountAnswersNResponsesPerRequest(t *testing.T) {
	srv := referencetest.Start(t)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"none", "one", "two", "three"} {
		if err := st.Send(countRequest("stream_count", id, int32(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	got, err := recvAll(t, st)
	if err != nil {
		t.Fatalf("stream ended with %v after %d responses", err, len(got))
	}
	seen := map[string][]int32{}
	for _, m := range got {
		if m.GetErrorMessage() != "" {
			t.Fatalf("error_message %q", m.GetErrorMessage())
		}
		r := m.GetInferResponse()
		resp, err := oip.FromProtoResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		k := resp.Outputs[0].Data.([]int32)[0]
		seen[r.GetId()] = append(seen[r.GetId()], k)
		want := map[string]int32{"one": 1, "two": 2, "three": 3}[r.GetId()]
		if final, ok := finalOf(r); !ok || final != (k == want) {
			t.Errorf("%s response %d: triton_final_response %v (present %v), want %v", r.GetId(), k, final, ok, k == want)
		}
	}
	if len(got) != 6 || fmt.Sprint(seen["one"], seen["two"], seen["three"]) != "[1] [1 2] [1 2 3]" || seen["none"] != nil {
		t.Fatalf("responses by id %v (%d in all), want one:[1] two:[1 2] three:[1 2 3] none:[]", seen, len(got))
	}
}

func TestStreamEmptyFinalResponseOnRequest(t *testing.T) {
	srv := referencetest.Start(t)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	st.Send(countRequest("stream_count", "z", 0, oip.Parameters{oip.ParamTritonEnableEmptyFinalResponse: true}))
	st.Send(countRequest("stream_count", "two", 2, oip.Parameters{oip.ParamTritonEnableEmptyFinalResponse: true}))
	st.CloseSend()
	got, err := recvAll(t, st)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d responses, %v; want 3", len(got), err)
	}
	var empties int
	for _, m := range got {
		r := m.GetInferResponse()
		if r.GetId() == "z" {
			empties++
			if final, _ := finalOf(r); !final || len(r.GetOutputs()) != 0 {
				t.Errorf("empty final response = %v", r)
			}
		}
	}
	if empties != 1 {
		t.Fatalf("%d empty final responses for n = 0, want 1", empties)
	}
}

func TestStreamErrorKeepsStreamOpen(t *testing.T) {
	srv := referencetest.Start(t)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := oip.ToProtoRequest(addSubRequest(), false)
	pb.ModelName, pb.Id = "add_sub", "good"
	bad := countRequest("no_such_model", "bad", 1, nil)
	neg := countRequest("stream_count", "negative", -1, nil)
	for _, r := range []*inferencepb.ModelInferRequest{bad, neg, pb} {
		if err := st.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	got, err := recvAll(t, st)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d responses, %v; want 3", len(got), err)
	}
	for _, m := range got {
		id := m.GetInferResponse().GetId()
		switch id {
		case "bad", "negative":
			if m.GetErrorMessage() == "" {
				t.Errorf("request %q: no error_message", id)
			}
		case "good":
			if m.GetErrorMessage() != "" {
				t.Fatalf("add_sub on the stream: %s", m.GetErrorMessage())
			}
			resp, err := oip.FromProtoResponse(m.GetInferResponse())
			if err != nil {
				t.Fatal(err)
			}
			checkAddSub(t, resp)
			if final, ok := finalOf(m.GetInferResponse()); !ok || !final {
				t.Errorf("a non-decoupled response is not flagged final")
			}
		default:
			t.Errorf("response with id %q", id)
		}
	}
}

func TestStreamResponsesInterleave(t *testing.T) {
	srv := referencetest.Start(t)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// The slow request's first token is due long after the fast one's answer.
	st.Send(countRequest("tokens", "slow", 2, oip.Parameters{"first_token_ms": int64(300), "interval_ms": int64(1)}))
	st.Send(countRequest("stream_count", "fast", 1, nil))
	st.CloseSend()
	got, err := recvAll(t, st)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d responses, %v; want 3", len(got), err)
	}
	if id := got[0].GetInferResponse().GetId(); id != "fast" {
		t.Fatalf("first response is %q: a request waited for the one sent before it", id)
	}
	resp, err := oip.FromProtoResponse(got[2].GetInferResponse())
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Output("OUTPUT1"); !ok || string(o.Data.([][]byte)[0]) != "quick " {
		t.Fatalf("second token = %+v", resp.Outputs)
	}
}

func TestDecoupledModelRejectedOnUnaryInfer(t *testing.T) {
	srv := referencetest.Start(t)
	_, err := dial(t, srv.GRPCAddr()).ModelInfer(ctxT(t), countRequest("stream_count", "", 1, nil))
	wantCode(t, err, codes.InvalidArgument, "ModelStreamInfer")
}

func TestStreamLimits(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) {
		c.MaxStreams = 1
		c.StreamIdleTimeout = 300 * time.Millisecond
	})
	c := dial(t, srv.GRPCAddr())
	first, err := c.ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	first.Send(countRequest("stream_count", "a", 1, nil))
	if _, err := first.Recv(); err != nil { // the stream is open on the server
		t.Fatal(err)
	}
	second, err := c.ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = second.Recv()
	wantCode(t, err, codes.ResourceExhausted, "--max-streams")

	// The first stream is never half-closed: the server ends it when idle.
	_, err = first.Recv()
	wantCode(t, err, codes.DeadlineExceeded, "--stream-idle-timeout")
}

// A client that sends without reading is held back: the server computes at
// most MaxStreamInflight requests and stops reading the stream.
func TestStreamSlowReaderIsBounded(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.MaxStreamInflight = 2 })
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	const total = 5000
	var sent atomic.Int64
	go func() {
		for range total {
			if st.Send(countRequest("stream_count", "x", 100000, nil)) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until sending stalls.
	last := int64(-1)
	for sent.Load() != last {
		last = sent.Load()
		time.Sleep(500 * time.Millisecond)
	}
	if last >= total {
		t.Fatalf("all %d requests were accepted by a stream nobody reads", total)
	}
	if grown := runtime.NumGoroutine() - before; grown > 20 {
		t.Fatalf("%d more goroutines with %d requests sent and none read", grown, last)
	}
}

func TestShutdownEndsIdleStreams(t *testing.T) {
	srv := startWith(t, nil)
	st, err := dial(t, srv.GRPCAddr()).ModelStreamInfer(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	st.Send(countRequest("stream_count", "a", 1, nil))
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open stream: %v", err)
	}
	_, err = st.Recv()
	wantCode(t, err, codes.Unavailable, "shutting down")
}
