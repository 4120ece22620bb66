// Package tlstest issues throwaway certificates for tests of TLS and mutual
// TLS: a CA, a server certificate for the loopback addresses, a client
// certificate, and a second, untrusted CA with a client certificate of its
// own, written as PEM files the way the CLI flags take them.
package tlstest
