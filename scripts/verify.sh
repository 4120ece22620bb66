#!/usr/bin/env bash
# verify checks the conformance suite's coverage contract:
#   - specs/coverage.md is what the spec tree generates today (not stale);
#   - every blocking (MUST) requirement of the core and of every extension the
#     suite probes (the extensions with a RegisterProbe) has a spec or a
#     waiver in specs/waivers.yaml;
#   - no spec is labelled with a requirement ID the catalog does not know.
# The coverage generator walks the ginkgo tree with PreviewSpecs: no server
# is needed and nothing runs. Regenerate with: go run ./conformance/cmd/coverage
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./conformance/cmd/coverage -check
