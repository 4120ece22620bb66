// Command echo is the anchor of the large-tensor rows of
// scripts/bench-large.sh: the limits under a generator and a server moving
// megabyte tensors over loopback, and a server that costs nearly nothing so
// that the generator can be measured alone.
//
// Echo servers (one process, until killed):
//
//	echo -listen-tcp 127.0.0.1:18750 -listen-grpc 127.0.0.1:18751
//
// The TCP echo reads a 4-byte big-endian length and that many bytes, makes
// one copy of them (a server must at least build an answer of the same size)
// and writes length and copy back: the loopback limit of the exchange. The
// gRPC echo is grpc-go with a pass-through codec behind
// grpc.UnknownServiceHandler: it receives the message bytes of any method and
// sends a copy back, so it is grpc-go's own ceiling for a message of that
// size, with no protobuf decoding.
//
// Clients (closed loop, -c workers, -d long; one JSON line on stdout):
//
//	echo -tcp 127.0.0.1:18750 -size 1048576 -c 4 -d 5s
//	echo -grpc 127.0.0.1:18751 -size 1048576 -c 4 -d 5s
//
// The TCP client opens one connection per worker; the gRPC client shares one
// ClientConn, as oipkit load does by default. Both run in their own process,
// as a generator and a server do.
//
// Canned servers, to measure the generator alone (until killed):
//
//	echo -canned-http 127.0.0.1:18752 -canned-grpc 127.0.0.1:18753 -model identity_fp32 -shape 1,262144
//
// Each answers every inference request with bytes built once at start: the
// fixture model's response to a zero-filled input of that shape (REST
// binary-data form; gRPC raw_output_contents), after reading the request in
// full and without decoding it. Readiness and metadata answer what oipkit
// load asks before a run. The REST side is net/http. The gRPC side (h2c.go)
// is not grpc-go, which capped the generator-alone row at 0.52-0.59x the TCP
// echo: it is a small HTTP/2 cleartext responder on x/net's framer and HPACK
// that reads each request (one copy, as the TCP echo makes), never decodes
// it, and answers every call with frames built once: HEADERS and trailers as
// never-indexed HPACK literals, the message in DATA frames of the client's
// largest frame size, one writev per flow-control window; its own receive
// windows are the largest HTTP/2 allows. Against it oipkit load (one
// connection, concurrency 4) does about what the TCP echo does: 896 req/s
// beside the echo's 873 at 1 MiB, 62 beside 40 at 16 MiB, on this 2-core
// machine with the generator sharing the cores. The answers do not echo the
// request's values, so the generator runs against them with --check-every 0.
//
// json_test.go holds the REST JSON rows' anchor: BenchmarkJSONRoundTrip, an
// encoding/json encode and decode of the same FP32 tensor.
package main
