// Command stream is the anchor of the streaming rows of
// scripts/bench-stream.sh: a bare grpc-go ModelStreamInfer server that
// answers every request with the messages the reference server sent for one
// request of the tokens fixture, and a bare grpc-go client that reads them.
//
//	stream -record 127.0.0.1:18701 -n 100 -listen 127.0.0.1:18760
//	stream -grpc 127.0.0.1:18760 -responses 100 -c 4 -d 5s
//
// The server records once, at start, the responses of a running reference
// server (oipkit serve) to a tokens request of INPUT0 = n with interval_ms 0
// and triton_enable_empty_final_response, as oipkit load --streaming sends
// it; it prints how many messages that is, then answers every request on
// any stream with those bytes, unchanged, through a pass-through codec. So
// the messages are the reference's, byte for byte, and the server does no
// work per response but grpc-go's.
//
// The client sends the same request bytes on one stream per worker, reads
// -responses messages per request through the pass-through codec (no
// decoding) and prints one JSON line: requests, responses and responses per
// second. It is what grpc-go alone costs a client per response.
package main
