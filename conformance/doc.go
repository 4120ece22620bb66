// Package conformance is oipkit's black-box conformance suite for the Open
// Inference Protocol (OIP / KServe v2): ginkgo v2 specs, defined in ordinary
// (non-test) files so that the oipkit binary carries them, the way the
// Kubernetes e2e binary does.
//
// Every spec is labelled with the catalog requirements it checks
// (Label("req:OIP-REST-INFER-006"), see package specs), with the features it
// needs ("feature:binary_tensor_data") and with its transport
// ("transport:rest" or "transport:grpc"), so that a run is selected with ginkgo
// label sets:
//
//	feature: isSubsetOf {binary_tensor_data} && transport: isSubsetOf {rest,grpc}
//
// The labels are a closed vocabulary (labels.go); an unknown requirement ID or
// feature panics while the spec tree is built.
//
// Specs speak only the protocol, through packages client, oip, tensor and
// specs/inferencepb; they never import the reference server. Each check is
// written from the requirement's catalog entry and its §5 ambiguities. How a
// failed check is graded is data: a requirement whose catalog level is MUST
// or MUST (schema) fails the spec; any other level, and deviations the
// catalog explicitly tolerates (e.g. HTTP 500 for an element-count mismatch,
// A-18; 503 for "not ready", A-02), is recorded as a warning report entry
// unless the run is strict. Two things fail whatever the level: a deviation
// the catalog itself grades FAIL (a 5xx for a request the server must or
// may refuse, OIP-REST-ERR-003), and a request that got no usable answer
// (timeout, dropped connection, a body over the size limit, a server that is
// no longer live after a negative spec). Informational checks (A-21
// precision, version policy, platform names) only record notes.
//
// [Run] is the single entry point: the CLI (oipkit conform) and the go test
// wrapper (conformance_test.go) both call it with an [Options] value. It
// checks that the targets answer, discovers the supported features from
// server metadata, runs the specs once (ginkgo allows one RunSpecs per
// process) and returns a [reports.ConformanceReport].
package conformance
