package main

import (
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// TestRoundTrips runs both measurements against their echoing servers:
// every trip must come back (a trip that fails is an error, not a figure).
func TestRoundTrips(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go echo(tcp)
	defer tcp.Close()
	if err := measureTCP(tcp.Addr().String(), 0, 20); err != nil {
		t.Fatalf("tcp: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	inferencepb.RegisterGRPCInferenceServiceServer(srv, &streamEcho{})
	go srv.Serve(ln)
	defer srv.Stop()
	if err := measureGRPC(ln.Addr().String(), 0, 20); err != nil {
		t.Fatalf("grpc: %v", err)
	}

	// Nothing listening: an error, not a hang or a figure.
	tcp.Close()
	if err := measureTCP(tcp.Addr().String(), 0, 1); err == nil {
		t.Fatal("tcp to a closed port: no error")
	}
}
