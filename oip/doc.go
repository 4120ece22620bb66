// Package oip holds the Open Inference Protocol messages — server and model
// metadata, inference requests and responses, parameters — independent of the
// transport, and their wire encodings: REST JSON, the REST binary-data
// extension (Inference-Header-Content-Length framing) and the gRPC messages of
// package inferencepb. Tensors inside the messages are [tensor.Tensor] values.
//
// The reference server decodes requests and encodes responses with this
// package; the client does the reverse. Both therefore agree on every byte.
//
// Choices where the spec is silent:
//
//   - REST: a JSON null is treated as an absent member everywhere ("id": null
//     is no id; "data": null is no data). Unknown members are ignored. Member
//     names match case-insensitively, as encoding/json does.
//   - REST: shape dimensions must be written as JSON integers (1.0, 1e0 and
//     "1" are errors, as in Triton). Parameter numbers become int64 when
//     written as integers that fit, uint64 above MaxInt64, and float64
//     otherwise; the encoders write floats with a fraction or exponent so
//     the kind survives a round trip.
//   - REST: binary_data_size is framing, not a parameter: decoders remove it
//     and encoders write it only for binary tensors (a caller's value is
//     ignored). A tensor must have exactly one of data and binary_data_size,
//     in requests and responses. Raw binary requests
//     (Inference-Header-Content-Length: 0) are not supported.
//   - Empty parameter maps decode as nil, and empty parameters are not
//     written.
//   - gRPC: names of inputs and requested outputs must not be empty. The
//     parameter kinds double and uint64 are carried both ways.
//   - BYTES elements decoded from binary data or raw contents alias the
//     buffer they came from; every other datatype is copied.
package oip
