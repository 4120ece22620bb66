// Package client is oipkit's Open Inference Protocol client: one [Client]
// interface with three transports — REST JSON, REST with the binary-data
// extension ([NewREST]) and gRPC with typed or raw tensor contents
// ([NewGRPC]).
//
// Calls return typed errors ([*Error]) carrying the HTTP status or gRPC code
// and the server's error text, with the raw response kept for callers such as
// the conformance suites that must inspect exactly what came back. Response
// bodies are read with a size limit and every call has a timeout, so a
// misbehaving server cannot hang or exhaust the caller.
//
// Below the Client interface, [REST.Do] sends arbitrary HTTP requests,
// [REST.PostInfer] and [DecodeInferResponse] split Infer into a send of a
// pre-encoded body and a decode, [REST.PrepareInfer] serializes a whole
// request once for [PreparedInfer.Send] (the load generator's hot path: over
// plain http one write per request on the client's own HTTP/1.1 keep-alive
// connections, every answer's framing checked, bodies dropped unless kept),
// and
// [GRPC.Stub], [GRPC.Conn] and [GRPC.Context] give hand-built messages the
// client's connections, timeout and metadata.
//
// Streaming: [GRPC.Stream] opens a ModelStreamInfer stream in the Triton /
// OpenVINO Model Server message shape (per-request errors wrap
// [ErrStreamRequest]); [REST.Generate] and [REST.GenerateStream] speak
// Triton's generate extension, the latter reading server-sent events with
// bounded lines and events (an in-stream error wraps [ErrStreamEvent]).
package client
