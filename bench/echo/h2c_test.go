package main

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/tensor"
)

// The canned gRPC server answers what oipkit load --protocol grpc-raw asks:
// readiness and metadata through grpc-go, and ModelInfer through the
// client's lean HTTP/2 transport (PreparedGRPCInfer) and through grpc-go,
// concurrently on one connection, with an answer larger than the client's
// stream window (1 MiB) and frame size, so flow control is exercised.
func TestCannedGRPC(t *testing.T) {
	const n = 300_000 // FP32 elements: 1.2 MB answers
	c, err := newCanned("identity_fp32", "1,300000")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveH2C(ln, newH2CAnswers(c.grpcAnswer))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := client.NewGRPC(ln.Addr().String(), true, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if ok, err := g.ServerReady(ctx); err != nil || !ok {
		t.Fatalf("ServerReady: %v, %v", ok, err)
	}
	md, err := g.ModelMetadata(ctx, "identity_fp32", "")
	if err != nil || md.Name != "identity_fp32" || len(md.Inputs) != 1 {
		t.Fatalf("ModelMetadata: %+v, %v", md, err)
	}
	in := tensor.Tensor{Name: "INPUT0", Datatype: tensor.FP32, Shape: []int64{1, n}, Data: make([]float32, n)}
	resp, err := g.Infer(ctx, &oip.InferRequest{Model: "identity_fp32", Inputs: []oip.InferInput{{Tensor: in}}})
	if err != nil {
		t.Fatalf("Infer (grpc-go): %v", err)
	}
	if len(resp.Outputs) != 1 || resp.Outputs[0].Name != "OUTPUT0" || len(resp.Outputs[0].Data.([]float32)) != n {
		t.Fatalf("Infer (grpc-go): %d outputs", len(resp.Outputs))
	}

	pr, err := oip.ToProtoRequest(&oip.InferRequest{Model: "identity_fp32", Inputs: []oip.InferInput{{Tensor: in}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := proto.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.PrepareInfer(msg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				out, err := p.Send(ctx, true)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(out, c.grpcInfer) {
					t.Errorf("lean ModelInfer: %d bytes answered, want the canned %d", len(out), len(c.grpcInfer))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("lean ModelInfer: %v", err)
	}
}
