package main

import (
	"flag"

	"github.com/oipkit/oipkit/client"
)

// addTLSFlags defines the client TLS flags, shared by conform and load, on
// fs. Any of them turns TLS on for gRPC; REST uses TLS when the URL is
// https://, and refuses TLS flags with an http:// URL.
func addTLSFlags(fs *flag.FlagSet, f *client.TLSFiles) {
	fs.BoolVar(&f.TLS, "tls", false, "use TLS for gRPC with the system's root CAs (REST: give an https:// URL); implied by the flags below")
	fs.StringVar(&f.CA, "ca", "", "PEM `file` of the CA certificates to verify the server with (default: the system's)")
	fs.StringVar(&f.Cert, "cert", "", "PEM `file` of a client certificate, for servers that require mutual TLS (with --key)")
	fs.StringVar(&f.Key, "key", "", "PEM `file` of the client certificate's private key")
	fs.StringVar(&f.ServerName, "tls-server-name", "", "server `name` to verify the certificate for and send as SNI (default: the target's host)")
	fs.BoolVar(&f.InsecureSkipVerify, "insecure-skip-verify", false, "accept any server certificate (testing only)")
}
