package client_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/tensor"
)

func countReq(model, id string, n int32) *oip.InferRequest {
	return &oip.InferRequest{Model: model, ID: id, Inputs: []oip.InferInput{
		{Tensor: tensor.Tensor{Name: "INPUT0", Datatype: tensor.Int32, Shape: []int64{1}, Data: []int32{n}}},
	}}
}

func TestStreamOverReference(t *testing.T) {
	srv := referencetest.Start(t)
	for _, raw := range []bool{false, true} {
		c, err := client.NewGRPC(srv.GRPCAddr(), raw, client.Options{Timeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// The client's 1ms timeout bounds calls, not the stream's life.
		st, err := c.Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range []*oip.InferRequest{countReq("stream_count", "a", 2), countReq("no_such_model", "bad", 1), countReq("tokens", "t", 3)} {
			if i == 2 {
				r.Parameters = oip.Parameters{"interval_ms": int64(5)}
			}
			if err := st.Send(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		byID := map[string]int{}
		for {
			r, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("raw %v: %v", raw, err)
			}
			byID[r.ID]++
			switch r.ID {
			case "bad":
				if r.Err == nil || !errors.Is(r.Err, client.ErrStreamRequest) || r.Err.Message == "" {
					t.Errorf("per-request error = %v", r.Err)
				}
			default:
				if r.Err != nil || r.Response == nil || !r.FinalKnown {
					t.Fatalf("response %+v", r)
				}
				k := r.Response.Outputs[0].Data.([]int32)[0]
				if r.Final != (k == map[string]int32{"a": 2, "t": 3}[r.ID]) {
					t.Errorf("%s response %d: final %v", r.ID, k, r.Final)
				}
			}
		}
		if byID["a"] != 2 || byID["bad"] != 1 || byID["t"] != 3 {
			t.Fatalf("raw %v: responses by id %v", raw, byID)
		}
		st.Close()
	}
}

func TestStreamEndedByServerIsTypedError(t *testing.T) {
	srv := referencetest.Start(t, func(c *reference.Config) { c.StreamIdleTimeout = 100 * time.Millisecond })
	c, err := client.NewGRPC(srv.GRPCAddr(), false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Recv()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.GRPCCode != codes.DeadlineExceeded || ce.Message == "" {
		t.Fatalf("Recv on a stream ended by the server = %v", err)
	}
}
