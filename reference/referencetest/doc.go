// Package referencetest starts a reference server on loopback ports for
// tests in any package:
//
//	srv := referencetest.Start(t)
//	c, _ := client.New(srv.HTTPURL(), client.ProtocolHTTP, client.Options{})
//	... srv.GRPCAddr() for gRPC
package referencetest
