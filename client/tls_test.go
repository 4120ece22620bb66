package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/oipkit/oipkit/client"
	"github.com/oipkit/oipkit/internal/tlstest"
	"github.com/oipkit/oipkit/oip"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
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
	// A prepared ModelInfer goes through grpc-go over TLS.
	msg, _ := proto.Marshal(&inferencepb.ModelInferRequest{ModelName: "m", Id: "7", RawInputContents: [][]byte{[]byte("abc")}})
	p, err := c.PrepareInfer(msg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Send(context.Background(), true)
	var resp inferencepb.ModelInferResponse
	if err != nil || proto.Unmarshal(b, &resp) != nil || resp.Id != "7" || string(resp.RawOutputContents[0]) != "abc" {
		t.Errorf("prepared ModelInfer over TLS: %v, %v", &resp, err)
	}
	if b, err := p.Send(context.Background(), false); err != nil || b != nil {
		t.Errorf("prepared ModelInfer over TLS, not kept: %q, %v", b, err)
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

// tlsReference starts the reference server serving TLS, mutual when asked.
func tlsReference(t *testing.T, pki *tlstest.PKI, mutual bool) *reference.Server {
	t.Helper()
	return referencetest.Start(t, func(c *reference.Config) { c.TLS = pki.ServerConfig(t, mutual) })
}

func identifyWith(t *testing.T, rest bool, target string, cfg *tls.Config) error {
	t.Helper()
	var c interface {
		Identify(context.Context) (*oip.ServerMetadata, error)
		Close() error
	}
	var err error
	if rest {
		c, err = client.NewREST(target, false, client.Options{TLS: cfg})
	} else {
		c, err = client.NewGRPC(target, false, client.Options{TLS: cfg})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Identify(context.Background())
	return err
}

// TestIdentifyTLS: over TLS and mutual TLS, identification succeeds with
// the right certificates and otherwise names the mistake in one line.
func TestIdentifyTLS(t *testing.T) {
	pki := tlstest.New(t)
	srv := tlsReference(t, pki, true)
	https, addr := srv.HTTPURL(), srv.GRPCAddr()
	if !strings.HasPrefix(https, "https://") {
		t.Fatalf("HTTPURL of a TLS server = %q", https)
	}
	withCert, noCert := pki.ClientConfig(t, true), pki.ClientConfig(t, false)
	untrusted := pki.ClientConfig(t, false)
	cert, err := tls.LoadX509KeyPair(pki.UntrustedClientCert, pki.UntrustedClientKey)
	if err != nil {
		t.Fatal(err)
	}
	untrusted.Certificates = []tls.Certificate{cert}
	otherName := pki.ClientConfig(t, true)
	otherName.ServerName = "elsewhere.example"
	byName := pki.ClientConfig(t, true)
	byName.ServerName = tlstest.ServerName

	for _, rest := range []bool{true, false} {
		transport, target := "gRPC", addr
		if rest {
			transport, target = "REST", https
		}
		t.Run(transport, func(t *testing.T) {
			if err := identifyWith(t, rest, target, withCert); err != nil {
				t.Errorf("with CA and client certificate: %v", err)
			}
			if err := identifyWith(t, rest, target, byName); err != nil {
				t.Errorf("with a server name the certificate lists: %v", err)
			}
			wantIdentifyErr(t, identifyWith(t, rest, target, &tls.Config{}), client.ErrTLS, "--ca", "unknown authority")
			wantIdentifyErr(t, identifyWith(t, rest, target, noCert), client.ErrTLS, "requires a client certificate", "--cert", "certificate required")
			wantIdentifyErr(t, identifyWith(t, rest, target, untrusted), client.ErrTLS, "--cert is not signed by one")
			wantIdentifyErr(t, identifyWith(t, rest, target, otherName), client.ErrTLS, "--tls-server-name", "elsewhere.example")
		})
	}
	// Plaintext to the TLS ports, each given as the right and the wrong
	// transport: the hint is TLS, not "a REST port" or "a gRPC port".
	plain := "http://" + srv.HTTPAddr()
	wantIdentifyErr(t, identifyWith(t, true, plain, nil), client.ErrNotOIP, "speaks TLS", "https://")
	wantIdentifyErr(t, identifyWith(t, false, addr, nil), client.ErrNotOIP, "speaks TLS", "--tls")
	wantIdentifyErr(t, identifyWith(t, true, "http://"+addr, nil), client.ErrNotOIP, "speaks TLS")
	// TLS to plaintext ports.
	plainSrv := referencetest.Start(t)
	wantIdentifyErr(t, identifyWith(t, true, "https://"+plainSrv.HTTPAddr(), withCert), client.ErrNotOIP, "http://")
	wantIdentifyErr(t, identifyWith(t, false, plainSrv.GRPCAddr(), withCert), client.ErrNotOIP, "does not speak TLS")
}

// TestGRPCRefusedClientCertificate: a refused client certificate is
// reported as the server's alert on an ordinary call too, not as
// "connection reset by peer" (see alertingTLS).
func TestGRPCRefusedClientCertificate(t *testing.T) {
	pki := tlstest.New(t)
	srv := tlsReference(t, pki, true)
	for i := range 5 { // the reset used to win the race most of the time
		c := grpcClient(t, srv.GRPCAddr(), false, client.Options{TLS: pki.ClientConfig(t, false)})
		_, err := c.ServerLive(context.Background())
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Fatalf("try %d: ServerLive without a client certificate: %v", i, err)
		}
		if terr := client.TLSError(err, pki.ClientConfig(t, false)); !errors.Is(terr, client.ErrTLS) || !strings.Contains(terr.Error(), "--cert") {
			t.Errorf("TLSError(%v) = %v", err, terr)
		}
	}
	c := grpcClient(t, srv.GRPCAddr(), true, client.Options{TLS: pki.ClientConfig(t, true)})
	if ready, err := c.ServerReady(context.Background()); err != nil || !ready {
		t.Errorf("ServerReady with a client certificate = %v, %v", ready, err)
	}
}

func TestTLSFilesConfig(t *testing.T) {
	pki := tlstest.New(t)
	if cfg, err := (client.TLSFiles{}).Config(); cfg != nil || err != nil {
		t.Errorf("no TLS asked: %v, %v", cfg, err)
	}
	cfg, err := client.TLSFiles{CA: pki.CA, Cert: pki.ClientCert, Key: pki.ClientKey, ServerName: "x.test"}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "x.test" || cfg.InsecureSkipVerify {
		t.Errorf("config = %+v", cfg)
	}
	if cfg, err := (client.TLSFiles{TLS: true}).Config(); err != nil || cfg == nil || cfg.RootCAs != nil {
		t.Errorf("--tls alone: %+v, %v (want the system roots)", cfg, err)
	}
	if cfg, err := (client.TLSFiles{InsecureSkipVerify: true}).Config(); err != nil || !cfg.InsecureSkipVerify {
		t.Errorf("--insecure-skip-verify: %+v, %v", cfg, err)
	}
	for _, c := range []struct {
		f    client.TLSFiles
		want string
	}{
		{client.TLSFiles{CA: pki.CA + ".missing"}, "no such file"},
		{client.TLSFiles{CA: pki.ClientKey}, "no PEM certificate"},
		{client.TLSFiles{Cert: pki.ClientCert}, "without its key"},
		{client.TLSFiles{Key: pki.ClientKey}, "without its certificate"},
		{client.TLSFiles{Cert: pki.ClientCert, Key: pki.ServerKey}, "private key does not match"},
	} {
		if _, err := c.f.Config(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.f, err, c.want)
		}
	}
}

// TestTLSErrorWording pins the hint for errors of the TLS library that
// the loopback tests do not produce.
func TestTLSErrorWording(t *testing.T) {
	for msg, want := range map[string]string{
		`Get "https://10.0.0.1:8443/v2": tls: failed to verify certificate: x509: cannot validate certificate for 10.0.0.1 because it doesn't contain any IP SANs`:                         "--tls-server-name",
		`connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate relies on legacy Common Name field, use SANs instead"`: "subjectAltName",
		`tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2030-01-01T00:00:00Z is after 2029-01-01T00:00:00Z`:                            "expired",
		`remote error: tls: unknown certificate authority`: "refused the client certificate",
		`remote error: tls: handshake failure`:             "TLS handshake failed",
	} {
		err := client.TLSError(errors.New(msg), nil)
		if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), want) {
			t.Errorf("TLSError(%q) = %v, want it to mention %q", msg, err, want)
		}
	}
}

func TestTLSErrorIgnoresOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("connection refused"), errors.New("HTTP 404: not found")} {
		if got := client.TLSError(err, nil); got != nil {
			t.Errorf("TLSError(%v) = %v", err, got)
		}
	}
}
