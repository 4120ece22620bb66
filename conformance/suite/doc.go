// Package suite holds the conformance specs of oipkit: ginkgo v2 specs in
// ordinary (non-test) files so that the oipkit binary carries them, the way
// the Kubernetes e2e binary does.
//
// There is one file per requirement group of the catalog, named after it:
// OIP-REST-PARAM-001 is checked in rest_param.go, OIP-GRPC-RAW-003 in
// grpc_raw.go, OIP-EXT-BIN-009 in ext_bin.go. A spec that checks
// requirements of several groups lives with its primary (first-labelled)
// requirement. An extension's probe lives in its ext_*.go file. The other
// files hold what several groups share: fixtures.go (the fixture models'
// test data, and the outputs expected of them, computed by package
// fixture, the fixture oracle — the contract as code, never the server), hard.go (large tensors of edge values in the forms each
// encoding carries), checks.go (checks made of several Verify calls, such
// as "the server rejects this request").
//
// Every spec is labelled with the catalog requirements it checks
// (engine.Req), the features it needs (engine.Needs) and its transport
// (engine.Over), and checks with engine.Verify and the engine's matchers.
// Specs are written from the requirement's catalog entry and its §5
// ambiguities, never from how any server behaves, and speak only the
// protocol (packages client, oip, tensor, specs/inferencepb) and compute
// expected outputs with the fixture oracle (package fixture).
package suite
