package reference_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/oipkit/oipkit/internal/tlstest"
	"github.com/oipkit/oipkit/reference"
	"github.com/oipkit/oipkit/reference/referencetest"
)

func TestLoadTLS(t *testing.T) {
	pki := tlstest.New(t)
	cfg, err := reference.LoadTLS(pki.ServerCert, pki.ServerKey, "")
	if err != nil || len(cfg.Certificates) != 1 || cfg.ClientAuth != tls.NoClientCert {
		t.Fatalf("TLS: %+v, %v", cfg, err)
	}
	cfg, err = reference.LoadTLS(pki.ServerCert, pki.ServerKey, pki.CA)
	if err != nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs == nil {
		t.Fatalf("mutual TLS: %+v, %v", cfg, err)
	}
	for _, c := range [][3]string{
		{pki.ServerCert, "", ""},
		{pki.ServerCert, pki.ClientKey, ""},
		{pki.ServerCert, pki.ServerKey, pki.ServerKey},
		{pki.ServerCert, pki.ServerKey, pki.CA + ".missing"},
	} {
		if _, err := reference.LoadTLS(c[0], c[1], c[2]); err == nil {
			t.Errorf("LoadTLS%q accepted", c)
		}
	}
}

// TestTLSHandshakeStall: a client that connects and never finishes the
// TLS handshake is dropped on both ports, not kept forever.
func TestTLSHandshakeStall(t *testing.T) {
	pki := tlstest.New(t)
	srv := referencetest.Start(t, func(c *reference.Config) {
		c.TLS = pki.ServerConfig(t, false)
		c.ReadHeaderTimeout = 200 * time.Millisecond
	})
	for _, addr := range []string{srv.HTTPAddr(), srv.GRPCAddr()} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Generous: the point is that it ends, not when.
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: a stalled handshake kept the connection open", addr)
		}
		conn.Close()
	}
}
