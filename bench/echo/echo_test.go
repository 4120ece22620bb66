package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/specs/inferencepb"
)

// The TCP echo answers each message with the same bytes, and measure stops
// by itself and counts them.
func TestTCPEcho(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go echoTCP(ln)
	rt, err := dialTCP(ln.Addr().String(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	c := rt.(*tcpClient)
	for i := range c.out[4:] {
		c.out[4+i] = byte(i)
	}
	if err := c.roundTrip(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.in, c.out) {
		t.Fatal("echo changed the message")
	}
	c.Close()
	n, err := measure(2, 50*time.Millisecond, func() (roundTripper, error) { return dialTCP(ln.Addr().String(), 1<<16) })
	if err != nil || n == 0 {
		t.Fatalf("measure: %d round trips, %v", n, err)
	}
}

// The canned answers are identity_fp32's response to the shape asked.
func TestCanned(t *testing.T) {
	c, err := newCanned("identity_fp32", "1,1000")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v2/models/identity_fp32/infer", "application/octet-stream", bytes.NewReader(make([]byte, 5000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hl, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(hl+4000) {
		t.Fatalf("status %d, %d bytes with a %d-byte header; want 200 and 4000 bytes of tensor", resp.StatusCode, resp.ContentLength, hl)
	}
	var pr inferencepb.ModelInferResponse
	if err := proto.Unmarshal(c.grpcInfer, &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.RawOutputContents) != 1 || len(pr.RawOutputContents[0]) != 4000 || pr.Outputs[0].Name != "OUTPUT0" {
		t.Fatalf("gRPC answer: %v", &pr)
	}
	if _, err := newCanned("identity_fp32", "1,x"); err == nil {
		t.Fatal("a bad shape was accepted")
	}
}
