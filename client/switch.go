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
