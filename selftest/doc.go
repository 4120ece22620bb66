// Package selftest proves that the conformance suite has teeth. Its tests
// (test files only) build the oipkit binary once and run `oipkit conform`
//
//   - against the reference server, which must conform over REST and gRPC;
//   - against deliberately broken servers: a proxy in front of the reference
//     server (HTTP middleware, gRPC interceptor) that breaks exactly one rule
//     at a time, where the report must show the broken requirement failed and
//     nothing else, with evidence for every finding; some of them hang, send
//     endless bodies or unreadable protobuf, and must fail only the spec
//     that met them;
//   - against conformant variants (Triton-like, KServe-like) that differ
//     from the reference only where the catalog's §5 says servers may: they
//     must get no failure, and exactly the warnings the catalog prescribes;
//   - with one transport, a --features override, headers and a Host
//     override, which must select and reach what they say;
//   - against a port where nothing listens, which must end within seconds
//     with a clear error and a non-zero exit status.
//
// Unlike package conformance, which is black-box, selftest may import the
// reference server.
package selftest
