package client

import "github.com/oipkit/oipkit/internal/envswitch"

// EnvLeanGRPC names the environment variable that turns the lean gRPC
// transport off for the process: with OIPKIT_LEAN_GRPC=off (or 0, false)
// PreparedGRPCInfer goes through grpc-go over plaintext too, as it does
// over TLS, so that the hand-written HTTP/2 client (h2c.go) can be measured
// against grpc-go's (make bench-compare's A/B row) and ruled out when a
// server and it disagree.
const EnvLeanGRPC = "OIPKIT_LEAN_GRPC"

// leanGRPC is read once: the transport is chosen for the process's life.
var leanGRPC = envswitch.On(EnvLeanGRPC)

// LeanGRPC reports whether prepared gRPC inference requests use the lean
// transport over plaintext in this process.
func LeanGRPC() bool { return leanGRPC }

// EnvLeanReads names the environment variable that makes HTTP/1.1
// connections keep a read buffer of their own: with OIPKIT_LEAN_READS=off
// (or 0, false) a connection holds its 16 KiB buffer while it waits for an
// answer, as it does over plain sockets (OIPKIT_RAWTCP=off), instead of
// waiting without one and taking a pooled buffer for the answer (http1.go);
// so that the memory the lean reads save can be measured, and the layer
// ruled out when a server and it disagree.
const EnvLeanReads = "OIPKIT_LEAN_READS"

// leanReads is read once, for the process's life.
var leanReads = envswitch.On(EnvLeanReads)

// LeanReads reports whether HTTP/1.1 connections over the raw-syscall layer
// wait for answers without a read buffer in this process.
func LeanReads() bool { return leanReads }
