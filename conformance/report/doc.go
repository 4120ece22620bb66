// Package reports holds oipkit's conformance report: a typed, versioned
// document (apiVersion oipkit.dev/v1alpha2, kind ConformanceReport) written
// once per conformance run, its JSON encoding, its text and Markdown
// renderings, and a requirement × implementation compatibility matrix built
// from several reports.
//
// The report is the product's public output: it is meant to be committed next
// to the implementation it describes and compared across implementations
// (Triton, MLServer, KServe, the reference server), so its shape changes only
// with a new apiVersion.
package reports
