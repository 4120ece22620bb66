package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/reference/referencetest"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// Each case is a real listener on loopback; identification must decide
// within its 2 s default, with the likely mistake in the message.

func restIdentify(t *testing.T, url string) error {
	t.Helper()
	c, err := client.NewREST(url, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Identify(context.Background())
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("Identify took %s, want at most the 2s default", d)
	}
	return err
}

func grpcIdentify(t *testing.T, addr string) error {
	t.Helper()
	c, err := client.NewGRPC(addr, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Identify(context.Background())
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("Identify took %s, want at most the 2s default", d)
	}
	return err
}

func wantIdentifyErr(t *testing.T, err, kind error, fragments ...string) {
	t.Helper()
	t.Logf("identify: %v", err)
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want %v", err, kind)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("err = %q, want it to mention %q", err, f)
		}
	}
}

func TestIdentifyReference(t *testing.T) {
	srv := referencetest.Start(t)
	if err := restIdentify(t, srv.HTTPURL()); err != nil {
		t.Errorf("REST: %v", err)
	}
	if err := grpcIdentify(t, srv.GRPCAddr()); err != nil {
		t.Errorf("gRPC: %v", err)
	}
}

func TestIdentifyNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	wantIdentifyErr(t, restIdentify(t, "http://"+addr), client.ErrUnreachable, "refused")
	wantIdentifyErr(t, grpcIdentify(t, addr), client.ErrUnreachable, "refused")
}

func TestIdentifyStaticWebServer(t *testing.T) {
	// What python3 -m http.server looks like: HTML 404s everywhere.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "SimpleHTTP/0.6 Python/3.11.7")
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html><body>404 Not Found</body></html>"))
	}))
	defer srv.Close()
	wantIdentifyErr(t, restIdentify(t, srv.URL), client.ErrNotOIP, "404 text/html", "SimpleHTTP")
	// The same HTTP/1.1 port given as the gRPC target.
	wantIdentifyErr(t, grpcIdentify(t, strings.TrimPrefix(srv.URL, "http://")), client.ErrNotOIP, "REST port", "--http")
}

func TestIdentifyOtherGRPCService(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	reflection.Register(s)
	go s.Serve(ln)
	defer s.Stop()
	addr := ln.Addr().String()
	wantIdentifyErr(t, grpcIdentify(t, addr), client.ErrNotOIP, "inference.GRPCInferenceService", "UNIMPLEMENTED", "grpc.health.v1.Health")
	// The same gRPC port given as the REST target.
	wantIdentifyErr(t, restIdentify(t, "http://"+addr), client.ErrNotOIP, "gRPC port", "--grpc")
}

func TestIdentifyReferencePortsSwapped(t *testing.T) {
	srv := referencetest.Start(t)
	wantIdentifyErr(t, restIdentify(t, "http://"+srv.GRPCAddr()), client.ErrNotOIP, "--grpc")
	wantIdentifyErr(t, grpcIdentify(t, srv.HTTPAddr()), client.ErrNotOIP, "--http")
}

func TestIdentifyTLSToPlainPort(t *testing.T) {
	srv := referencetest.Start(t)
	wantIdentifyErr(t, restIdentify(t, "https://"+srv.HTTPAddr()), client.ErrNotOIP, "http://")
}

func TestIdentifySilentServer(t *testing.T) {
	// Accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	wantIdentifyErr(t, restIdentify(t, "http://"+ln.Addr().String()), client.ErrUnreachable, "no answer")
}

// metadataOnly serves inference.GRPCInferenceService without ServerLive.
type metadataOnly struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
}

func (metadataOnly) ServerMetadata(context.Context, *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	return &inferencepb.ServerMetadataResponse{Name: "partial"}, nil
}

// A server of the service that lacks ServerLive is an OIP server (a broken
// one, for the conformance suite to grade), not another service.
func TestIdentifyServiceWithoutServerLive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	inferencepb.RegisterGRPCInferenceServiceServer(s, metadataOnly{})
	go s.Serve(ln)
	defer s.Stop()
	if err := grpcIdentify(t, ln.Addr().String()); err != nil {
		t.Errorf("Identify: %v, want an OIP server", err)
	}
}
