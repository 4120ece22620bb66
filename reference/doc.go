// Package reference is oipkit's reference Open Inference Protocol server: a
// REST front end (with the binary_tensor_data extension) and a gRPC front end
// (inference.GRPCInferenceService core RPCs plus grpc.health.v1) over a
// repository of native Go models, by default the fixture models of package
// model.
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
// model_configuration, statistics, model_repository): its REST routes, its
// gRPC methods and whether it is advertised; the server metadata's
// extensions list is derived from the registry.
//
// Package referencetest starts a server on loopback for tests.
package reference
