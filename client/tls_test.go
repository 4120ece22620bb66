package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/specs/inferencepb"
)

// tlsConfig trusts the certificate of srv, which httptest issues for
// example.com and 127.0.0.1.
func tlsConfig(srv *httptest.Server) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool}
}

func TestRESTTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Error("plaintext request")
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()

	c, err := client.NewREST(srv.URL, false, client.Options{TLS: tlsConfig(srv)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if live, err := c.ServerLive(context.Background()); err != nil || !live {
		t.Errorf("ServerLive over TLS = %v, %v", live, err)
	}

	// Without the CA the certificate is refused: a transport failure.
	c2, err := client.NewREST(srv.URL, false, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.ServerLive(context.Background())
	if e := asError(t, err); e.HTTPStatus != 0 || e.Err == nil {
		t.Errorf("untrusted certificate: %+v", e)
	}

	// TLS options with an http:// URL are a mistake, not silently ignored.
	if _, err := client.NewREST(strings.Replace(srv.URL, "https", "http", 1), false, client.Options{TLS: &tls.Config{}}); err == nil {
		t.Error("TLS options with an http:// URL accepted")
	}
}

func TestGRPCTLS(t *testing.T) {
	// Borrow httptest's certificate for a gRPC server.
	hs := httptest.NewTLSServer(http.NotFoundHandler())
	defer hs.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impl := &cannedGRPC{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&hs.TLS.Certificates[0])))
	inferencepb.RegisterGRPCInferenceServiceServer(gs, impl)
	go gs.Serve(ln)
	defer gs.Stop()
	addr := ln.Addr().String()

	// The authority override is also the name the certificate is checked for.
	c := grpcClient(t, addr, false, client.Options{TLS: tlsConfig(hs), Host: "example.com"})
	if live, err := c.ServerLive(context.Background()); err != nil || !live {
		t.Errorf("ServerLive over TLS = %v, %v", live, err)
	}
	if got := impl.lastMD().Get(":authority"); len(got) != 1 || got[0] != "example.com" {
		t.Errorf(":authority = %q", got)
	}

	c2 := grpcClient(t, addr, false, client.Options{TLS: tlsConfig(hs), Host: "wrong.example.org"})
	if _, err := c2.ServerLive(context.Background()); err == nil {
		t.Error("a certificate for another name was accepted")
	}
	c3 := grpcClient(t, addr, false, client.Options{})
	if _, err := c3.ServerLive(context.Background()); err == nil {
		t.Error("plaintext call to a TLS server succeeded")
	}
}
