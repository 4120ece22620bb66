// Package oip holds the Open Inference Protocol messages — server and model
// metadata, inference requests and responses, parameters — independent of the
// transport, and their wire encodings: REST JSON, the REST binary-data
// extension (Inference-Header-Content-Length framing) and the gRPC messages of
// package inferencepb. Tensors inside the messages are [tensor.Tensor] values.
//
// The reference server decodes requests and encodes responses with this
// package; the client does the reverse. Both therefore agree on every byte.
package oip
