// Package report is the conformance report API: a typed, versioned document
// (apiVersion oipkit.dev/v1alpha2, kind ConformanceReport) written once per
// conformance run, its JSON encoding, its text, Markdown and HTML
// renderings, the findings file (one upstream bug report per distinct
// defect, with a curl or grpcurl reproducer), the blocked-requirement
// causes, and a requirement × implementation compatibility matrix built from
// several reports.
//
// It lives under conformance/ because it is the conformance suite's output
// and nothing else's, as the Gateway API project keeps its ConformanceReport
// types under its conformance tree: the suite (conformance, engine) builds
// it, `oipkit conform`, `report --findings` and `matrix` read and render it.
// It imports neither the suite nor any server, so a tool that only reads
// committed reports needs nothing more. The committed reports themselves
// stay in the repository's reports/ folder, which holds results, not code.
//
// Profile verdicts are the words of package verdict (pass, failed,
// inconclusive, not-supported), and ConformanceReport.ExitCode maps them to
// its exit statuses; reports written before it, with "fail" and "partial",
// still read.
//
// The report is the product's public output: it is meant to be committed next
// to the implementation it describes and compared across implementations
// (Triton, MLServer, KServe, the reference server), so its shape changes only
// with a new apiVersion.
package report
