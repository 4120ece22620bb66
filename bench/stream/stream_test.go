package main

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/oipkit/oipkit/reference/referencetest"
)

// The recording is the reference's answer to one tokens request: n
// responses and an empty final one or the last flagged final, never fewer.
func TestRecordTokens(t *testing.T) {
	srv := referencetest.Start(t)
	cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	msgs, err := recordTokens(context.Background(), cc, srv.GRPCAddr(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 7 && len(msgs) != 8 {
		t.Fatalf("recorded %d messages for 7 tokens", len(msgs))
	}
}

// The server answers each request with the recording, and the client reads
// exactly that many messages per request and stops at its deadline.
func TestServeAndClient(t *testing.T) {
	ref := referencetest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- serve(ctx, ref.GRPCAddr(), addr, 5) }()
	var requests, responses int64
	var cerr error
	for range 50 { // until the server listens
		if requests, responses, cerr = client(ctx, addr, 5, 5, 2, 300*time.Millisecond); cerr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	if requests == 0 || responses < 5*requests || responses >= 5*requests+2*5 {
		t.Errorf("%d requests completed with %d responses, want 5 each (and at most one partial per stream)", requests, responses)
	}
	cancel()
	if err := <-errs; err != nil && err != grpc.ErrServerStopped {
		t.Errorf("serve: %v", err)
	}
}
