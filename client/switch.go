package client

import "os"

// EnvLeanGRPC names the environment variable that turns the lean gRPC
// transport off for the process: with OIPKIT_LEAN_GRPC=off (or 0, false)
// PreparedGRPCInfer goes through grpc-go over plaintext too, as it does
// over TLS, so that the hand-written HTTP/2 client (h2c.go) can be measured
// against grpc-go's (make bench-compare's A/B row) and ruled out when a
// server and it disagree.
const EnvLeanGRPC = "OIPKIT_LEAN_GRPC"

// leanGRPC is read once: the transport is chosen for the process's life.
var leanGRPC = switchOn(os.Getenv(EnvLeanGRPC))

func switchOn(v string) bool {
	switch v {
	case "off", "0", "false", "no":
		return false
	}
	return true
}

// LeanGRPC reports whether prepared gRPC inference requests use the lean
// transport over plaintext in this process.
func LeanGRPC() bool { return leanGRPC }
