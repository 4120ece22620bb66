package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
)

// TLSFiles says how a client secures its connections, by file names: what
// the --tls, --ca, --cert, --key, --tls-server-name and
// --insecure-skip-verify flags of oipkit conform and oipkit load give. It
// is recorded in load results, so it holds paths, never key material.
type TLSFiles struct {
	// TLS asks for TLS with the system's root CAs when no other field is
	// set. It matters for gRPC only: REST uses TLS exactly when the URL is
	// https://.
	TLS bool `json:"tls,omitempty"`
	// CA is a PEM file of the CA certificates to verify the server with,
	// instead of the system's.
	CA string `json:"ca,omitempty"`
	// Cert and Key are PEM files of a client certificate and its private
	// key, for servers that require mutual TLS. Both or neither.
	Cert string `json:"cert,omitempty"`
	Key  string `json:"key,omitempty"`
	// ServerName is the name the server's certificate is verified for (and
	// sent as SNI), instead of the target's host: for a target reached
	// through a port-forward or by IP address.
	ServerName string `json:"serverName,omitempty"`
	// InsecureSkipVerify accepts any server certificate. For tests only:
	// it gives up on knowing whom the load is sent to.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// Enabled reports whether any field asks for TLS.
func (f TLSFiles) Enabled() bool {
	return f.TLS || f.CA != "" || f.Cert != "" || f.Key != "" || f.ServerName != "" || f.InsecureSkipVerify
}

// Config reads the files and returns the TLS configuration for
// [Options.TLS], or nil when f asks for no TLS. Its errors name the file
// and what is wrong with it.
func (f TLSFiles) Config() (*tls.Config, error) {
	if !f.Enabled() {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         f.ServerName,
		InsecureSkipVerify: f.InsecureSkipVerify, //nolint:gosec // an explicit, documented opt-in
	}
	if f.CA != "" {
		b, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", f.CA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.Cert != "" && f.Key != "":
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case f.Cert != "":
		return nil, fmt.Errorf("client certificate %s given without its key", f.Cert)
	case f.Key != "":
		return nil, fmt.Errorf("client key %s given without its certificate", f.Key)
	}
	return cfg, nil
}

// ErrTLS is wrapped by the errors of [TLSError]: the connection was made,
// but no TLS session could be set up over it, so whether an OIP server is
// behind it is unknown.
var ErrTLS = errors.New("TLS failed")

// TLSError explains err, the failure of a call made with the TLS
// configuration cfg (nil for plaintext), as a TLS failure in one line with
// the likely fix, wrapping ErrTLS; it returns nil when err is not one. It
// reads the error's text because gRPC hands transport failures over as
// status messages.
func TLSError(err error, cfg *tls.Config) error {
	if err == nil {
		return nil
	}
	why, cause, ok := explainTLS(err.Error(), cfg)
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: %s (%s)", ErrTLS, why, cause)
}

// explainTLS recognises a TLS failure in an error message: why is the
// likely mistake and its fix, cause the TLS library's own words.
func explainTLS(msg string, cfg *tls.Config) (why, cause string, ok bool) {
	hasCert := cfg != nil && (len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil)
	switch {
	case strings.Contains(msg, "certificate signed by unknown authority"):
		why = "the server's certificate is not signed by a CA this client trusts: pass the CA that signed it with --ca (or --insecure-skip-verify to skip verification)"
	case strings.Contains(msg, "x509: certificate is valid for"), strings.Contains(msg, "x509: certificate is not valid for any names"),
		strings.Contains(msg, "because it doesn't contain any IP SANs"):
		why = "the server's certificate is not for the name connected to: connect by a name it lists, or set --tls-server-name"
	case strings.Contains(msg, "x509: certificate relies on legacy Common Name field"):
		why = "the server's certificate names its host only in the Common Name, which Go does not accept: it needs a subjectAltName"
	case strings.Contains(msg, "x509: certificate has expired or is not yet valid"):
		why = "the server's certificate has expired or is not yet valid"
	case hasCert && (strings.Contains(msg, "tls: certificate required") || strings.Contains(msg, "tls: client didn't provide a certificate")):
		// Go sends a client certificate only when it is signed by one of
		// the CAs the server names as acceptable.
		why = "the server requires a client certificate signed by a CA it trusts, and --cert is not signed by one"
	case strings.Contains(msg, "tls: certificate required"), strings.Contains(msg, "tls: client didn't provide a certificate"):
		why = "the server requires a client certificate (mutual TLS): pass --cert and --key"
	case strings.Contains(msg, "remote error: tls: unknown certificate authority"),
		strings.Contains(msg, "remote error: tls: bad certificate"),
		strings.Contains(msg, "remote error: tls: unknown certificate"),
		strings.Contains(msg, "remote error: tls: certificate expired"):
		why = "the server refused the client certificate: it is not signed by a CA the server trusts, or has expired"
	case strings.Contains(msg, "first record does not look like a TLS handshake"),
		strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		why = "the server does not speak TLS: use http:// and drop the TLS flags"
	case strings.Contains(msg, "tls: "), strings.Contains(msg, "x509: "), strings.Contains(msg, "authentication handshake failed"):
		why = "the TLS handshake failed"
	default:
		return "", "", false
	}
	return why, tlsCause(msg), true
}

// tlsCause trims the wrapping of HTTP and gRPC from a transport failure,
// leaving the TLS library's own words.
func tlsCause(msg string) string {
	i := strings.Index(msg, "remote error: ")
	if i < 0 {
		i = strings.Index(msg, "tls: ")
	}
	if i < 0 {
		i = strings.Index(msg, "x509: ")
	}
	if i < 0 {
		return msg
	}
	return strings.TrimRight(msg[i:], `"`)
}

// firstReadWait bounds how long a new gRPC connection waits for the
// server's first bytes after the TLS handshake (see alertingTLS).
const firstReadWait = 500 * time.Millisecond

// alertingTLS is TLS for gRPC that reads the server's first bytes before
// gRPC writes anything. In TLS 1.3 a server checks the client certificate
// after the client has finished its handshake; gRPC then writes its preface
// at once and, when the server refused the certificate, usually reports
// "connection reset by peer" instead of the server's alert ("certificate
// required"). An HTTP/2 server sends its SETTINGS right after the
// handshake, so the read costs nothing on a good connection; when nothing
// comes within firstReadWait the connection goes on unchanged.
type alertingTLS struct {
	credentials.TransportCredentials
}

func (c alertingTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(firstReadWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		conn.Close()
		return nil, nil, err
	}
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		conn.Close()
		return nil, nil, err
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return &readAheadConn{Conn: conn, ahead: buf[:n]}, info, nil
}

func (c alertingTLS) Clone() credentials.TransportCredentials {
	return alertingTLS{c.TransportCredentials.Clone()}
}

// readAheadConn returns the bytes read ahead before reading on.
type readAheadConn struct {
	net.Conn
	ahead []byte
}

func (c *readAheadConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// speaksTLS reports whether a TLS handshake with addr gets a TLS answer,
// for the hint when a plaintext client met a TLS port. Any certificate
// will do: only the protocol is in question.
func speaksTLS(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}} //nolint:gosec // a protocol probe, nothing is sent
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return strings.Contains(err.Error(), "remote error: tls: ")
	}
	conn.Close()
	return true
}

// tlsDiagnose makes one TLS connection to addr with cfg (nil: the system's
// roots) and waits briefly for the server's first word: an HTTP/1.1 server
// says nothing until asked, while a server that refuses the client
// certificate says so with an alert. It returns that failure's text, or ""
// when the connection is fine.
func tlsDiagnose(ctx context.Context, addr string, cfg *tls.Config) string {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	cfg.NextProtos = []string{"http/1.1"}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	deadline := time.Now().Add(firstReadWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetReadDeadline(deadline)
	if _, err := conn.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "remote error: tls: ") {
		return err.Error()
	}
	return ""
}
