// Package selftest proves that the conformance suite has teeth. Its tests
// (test files only) build the oipkit binary once and run `oipkit conform`
//
//   - against the reference server, which must conform over REST and gRPC;
//   - against deliberately broken servers: a proxy in front of the reference
//     server (HTTP middleware, gRPC interceptor) that breaks exactly one rule
//     at a time, where the report must show the broken requirement failed and
//     nothing else;
//   - against a port where nothing listens, which must end within seconds
//     with a clear error and a non-zero exit status.
//
// Unlike package conformance, which is black-box, selftest may import the
// reference server.
package selftest
