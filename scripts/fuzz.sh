#!/usr/bin/env bash
# Runs every Go fuzz target briefly: scripts/fuzz.sh [duration per target].
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
status=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/oipkit-fuzz.log 2>&1; then
      cat /tmp/oipkit-fuzz.log; status=1
    fi
  done
done
exit $status
