// Package conformance is oipkit's black-box conformance suite for the Open
// Inference Protocol (OIP / KServe v2), and its public API: [Run] with its
// [Options], the report it builds (report.ConformanceReport, written as
// report.json, report.md, report.html and junit.xml: [WriteReports]), the
// GitHub Actions step summary, and the coverage of the catalog by the specs
// ([PreviewCoverage]).
//
// The suite is in two packages below this one:
//   - conformance/engine: targets, identification, discovery of fixtures
//     and features (probes), evidence, route health, the gomega matchers
//     and the one fail handler that grades every finding;
//   - conformance/suite: the ginkgo specs, one file per requirement group
//     of the catalog (rest_param.go for OIP-REST-PARAM, grpc_raw.go for
//     OIP-GRPC-RAW, ext_bin.go for OIP-EXT-BIN).
//
// Every spec is labelled with the catalog requirements it checks
// (Label("req:OIP-REST-INFER-006")), the features it needs
// ("feature:binary_tensor_data") and its transport ("transport:rest"), so
// that a run is selected with ginkgo label sets:
//
//	feature: isSubsetOf {binary_tensor_data} && transport: isSubsetOf {rest,grpc}
//
// How a failed check is graded is data (specs/requirements.yaml): each
// requirement says whom it binds and the class of a failed check. A fail
// (the server broke a rule the spec puts on servers, or gave no usable
// answer) fails the verdict; lenient (the server accepted a request that
// breaks a rule the spec puts on clients) and warning (a difference stock
// clients tolerate: a weaker level, an ambiguity of the catalog such as
// HTTP 500 for an element-count mismatch, A-18) fail it only under
// --strict. A 5xx answer to a request the server must or may refuse is a
// fail whatever the level (OIP-REST-ERR-003).
//
// [Run] is the single entry point: the CLI (oipkit conform) and the go test
// wrapper (conformance_test.go) both call it. It identifies the targets
// (client.Identify: a target that is not an OIP server stops the run in
// about two seconds), discovers fixtures and features, runs the specs once
// (ginkgo allows one RunSpecs per process) and returns the report.
package conformance
