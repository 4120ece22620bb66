// Package engine is the machinery of oipkit's conformance suite: everything
// a spec uses that is not itself a check of the protocol. The specs live in
// package suite, one file per requirement group; package conformance runs
// them and builds the report.
//
// It holds:
//   - the target: clients for the server under test, identification
//     (client.Identify), liveness, fixture discovery, and the probes that
//     find out which extensions really work (probe.go);
//   - evidence: every HTTP exchange and RPC a spec makes, kept byte for
//     byte for the report (evidence.go);
//   - route health: after the first call on a route (transport, method and
//     route template) that gets no answer in time, the specs needing that
//     route are reported not run instead of each waiting out its timeout
//     (route.go);
//   - the labels that tie specs to requirements, features and transports
//     (labels.go);
//   - checks and grading: [Verify] names the requirement once and takes a
//     gomega matcher; one fail handler grades every failed check by the
//     catalog (class, level, whom the rule binds) and records it with its
//     evidence, and a spec fails only after all its findings are recorded
//     (check.go);
//   - the OIP matchers (matchers.go, outputs.go): status and {"error":
//     string} bodies, datatype-aware tensor equality, gRPC status codes,
//     and the wire-level checks of inference responses;
//   - the schema (schema.go): every 2xx REST body a spec receives is read
//     strictly and validated against specs/oip-rest.schema.json after the
//     spec, each problem graded under the requirement the schema names
//     for its place; [MatchSchema] is the same check inside a spec.
//
// Specs speak only the protocol, through packages client, oip, tensor and
// specs/inferencepb; nothing here imports the reference server.
package engine
