package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ServerName is a DNS name the server certificate carries besides
// localhost, 127.0.0.1 and ::1, for tests of a server name override.
const ServerName = "oipkit-reference.test"

// PKI is a set of PEM files in a test's temporary directory.
type PKI struct {
	CA                    string // the CA that signed the server and client certificates
	ServerCert, ServerKey string // for localhost, 127.0.0.1, ::1 and ServerName
	ClientCert, ClientKey string // signed by CA, for client authentication
	// OtherCA signed nothing the server uses: trusting it instead of CA
	// is the "wrong CA" mistake.
	OtherCA string
	// UntrustedClientCert and UntrustedClientKey are signed by OtherCA, so
	// a server that trusts CA refuses them.
	UntrustedClientCert, UntrustedClientKey string
}

// New issues the certificates and writes them to t.TempDir().
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ca, caKey, caDER := newCA(t, "oipkit test CA")
	other, otherKey, otherDER := newCA(t, "oipkit untrusted CA")
	p := &PKI{CA: write("ca.crt", "CERTIFICATE", caDER), OtherCA: write("other-ca.crt", "CERTIFICATE", otherDER)}

	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "oipkit reference server"},
		DNSNames:    []string{"localhost", ServerName},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, key := issue(t, server, ca, caKey)
	p.ServerCert, p.ServerKey = write("server.crt", "CERTIFICATE", der), write("server.key", "PRIVATE KEY", key)

	clientTmpl := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: "oipkit load generator"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	}
	der, key = issue(t, clientTmpl(), ca, caKey)
	p.ClientCert, p.ClientKey = write("client.crt", "CERTIFICATE", der), write("client.key", "PRIVATE KEY", key)
	der, key = issue(t, clientTmpl(), other, otherKey)
	p.UntrustedClientCert, p.UntrustedClientKey = write("untrusted-client.crt", "CERTIFICATE", der), write("untrusted-client.key", "PRIVATE KEY", key)
	return p
}

// ServerConfig is a server TLS configuration with the server certificate;
// with mutual set it requires a client certificate signed by CA.
func (p *PKI) ServerConfig(t testing.TB, mutual bool) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.ServerCert, p.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.pool(t, p.CA)
	}
	return cfg
}

// ClientConfig is a client TLS configuration that trusts CA, with the
// client certificate when withCert is set.
func (p *PKI) ClientConfig(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.pool(t, p.CA), MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

func (p *PKI) pool(t testing.TB, file string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("tlstest: no certificate in %s", file)
	}
	return pool
}

func template(t testing.TB) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template(t)
	tmpl.Subject = pkix.Name{CommonName: name}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, der
}

// issue signs tmpl with the CA and returns the certificate and its PKCS #8
// private key, both DER.
func issue(t testing.TB, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	base := template(t)
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = base.SerialNumber, base.NotBefore, base.NotAfter, base.KeyUsage
	cert, err = x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if key, err = x509.MarshalPKCS8PrivateKey(k); err != nil {
		t.Fatal(err)
	}
	return cert, key
}
