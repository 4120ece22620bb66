// Package reference is oipkit's reference Open Inference Protocol server: a
// REST front end (with the binary_tensor_data extension) and a gRPC front end
// (inference.GRPCInferenceService core RPCs plus grpc.health.v1) over a
// repository of native Go models (package model), by default the fixture
// models of package fixture, the fixture oracle.
//
// Both front ends decode with package oip and share one pipeline: look the
// model up, validate the request against its metadata (validate.go), run it
// with panics recovered, and keep the requested outputs. Client mistakes are
// always 4xx / INVALID_ARGUMENT, NOT_FOUND or RESOURCE_EXHAUSTED; 5xx and
// INTERNAL are reserved for server faults. GET /metrics exposes Prometheus
// counters and latency histograms of inference requests.
//
// Protocol extensions are registered in extensions.go, one entry per
// extension defined in its ext_<name>.go file (binary_tensor_data,
// model_configuration, statistics, model_repository, sequence, generate):
// its REST routes, its gRPC methods and whether it is advertised; the server
// metadata's extensions list is derived from the registry. gRPC
// ModelStreamInfer serves any model, decoupled models (model.Decoupled: 0..N
// responses per request, triton_final_response) answered as they go
// (ext_stream.go); sequences of stateful models (model.Stateful) are keyed by
// sequence_id on every transport (ext_sequence.go); REST generate and
// generate_stream answer with server-sent events (ext_generate.go). Each is
// bounded by Config limits (open streams, requests in flight per stream, idle
// streams, live and idle sequences).
//
// On plain TCP the REST listener answers POST .../infer over HTTP/1.1 on a
// fast path of its own (http1.go) and hands every other connection to
// net/http; both run the same handler.
//
// Package referencetest starts a server on loopback for tests.
package reference
