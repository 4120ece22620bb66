// Command rtt measures the floor under every client-side latency on this
// machine: the round trip of a small message between two processes over
// loopback, with an idle gap before each send, as a streaming client waits
// between a request and its first response. Over plain TCP it is the
// kernel's and the scheduler's share; over gRPC (a ModelStreamInfer stream
// whose server answers each request at once with a response built at start)
// it adds HTTP/2 and grpc-go, and nothing of oipkit. A client's time to first
// response cannot be nearer the server's own figure than this round trip;
// scripts/ttfr-check.sh prints both beside oipkit's.
//
//	rtt -listen-tcp 127.0.0.1:18742 -listen-grpc 127.0.0.1:18743   # the echoing process
//	rtt -tcp 127.0.0.1:18742 -gap 5ms -n 1000
//	rtt -grpc 127.0.0.1:18743 -gap 5ms -n 1000
package main
