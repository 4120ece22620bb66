// Command bare is the anchor of the reference server's benchmarks: the
// thinnest servers Go offers, answering add_sub with bytes built once at
// start. scripts/bench-compare.sh drives it and `oipkit serve` with the same
// clients and the same request, so the ratio of their throughputs is the
// cost of the reference server's own work (routing, decoding, validation,
// the model, encoding, metrics).
//
//	bare --request body.json --http 127.0.0.1:18710 --grpc 127.0.0.1:18711
//
// The REST side is a bare net/http handler: it reads the whole request body
// and writes the pre-built response of the reference server to that request
// (the binary-data form when the request carries
// Inference-Header-Content-Length). The gRPC side is a bare grpc-go service
// whose ModelInfer returns a pre-built ModelInferResponse (raw or typed
// contents, as the request used). The responses are computed once from the
// request file with the same fixture model and encoders as the reference
// server, so their bytes are the same (bare_test.go checks it).
package main
