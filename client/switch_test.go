package client_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// TestPreparedGRPCInferAnswers sends a prepared identity_int32 request to the
// reference server and checks the answer, over whichever transport this
// process uses (TestLeanGRPCSwitchedOff runs it with the lean one off).
func TestPreparedGRPCInferAnswers(t *testing.T) {
	srv := referencetest.Start(t)
	c, err := client.NewGRPC(srv.GRPCAddr(), true, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in0 := []byte{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff} // INT32 [1, -2]
	req := &inferencepb.ModelInferRequest{ModelName: "identity_int32", Id: "switch",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 2}}},
		RawInputContents: [][]byte{in0}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PrepareInfer(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // a reused connection too
		answer, err := p.Send(context.Background(), true)
		if err != nil {
			t.Fatalf("lean gRPC %v: %v", client.LeanGRPC(), err)
		}
		var resp inferencepb.ModelInferResponse
		if err := proto.Unmarshal(answer, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Id != "switch" || len(resp.Outputs) != 1 || len(resp.RawOutputContents) != 1 || !bytes.Equal(resp.RawOutputContents[0], in0) {
			t.Fatalf("answer %v, want INPUT0's bytes back in OUTPUT0", &resp)
		}
	}
}

// TestLeanGRPCSwitchedOff: with OIPKIT_LEAN_GRPC=off the prepared requests
// go through grpc-go, and traffic still flows.
func TestLeanGRPCSwitchedOff(t *testing.T) {
	if !client.LeanGRPC() {
		t.Skip("already switched off")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestPreparedGRPCInferAnswers|TestLeanGRPCSwitchedOff)$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), client.EnvLeanGRPC+"=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with %s=off: %v\n%s", client.EnvLeanGRPC, err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestPreparedGRPCInferAnswers")) || !bytes.Contains(out, []byte("--- SKIP: TestLeanGRPCSwitchedOff")) {
		t.Fatalf("with %s=off the test did not run:\n%s", client.EnvLeanGRPC, out)
	}
}
