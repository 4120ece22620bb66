// Package version holds oipkit's version, reported by the CLI, the reference
// server's metadata, conformance reports and load-generator results.
package version

// Version is set at build time with -ldflags "-X github.com/oipkit/oipkit/version.Version=…".
var Version = "0.1.0-dev"

// SuiteVersion is the version of the conformance suite's requirement set; it
// changes when specs are added or their verdicts change.
const SuiteVersion = "v0.1.0"
