#!/usr/bin/env bash
# Runs every Go fuzz target briefly: scripts/fuzz.sh [duration per target].
# A target whose only failure is Go's fuzzing engine missing its own deadline
# ("context deadline exceeded" with no failing input written: a worker busy
# when -fuzztime ends on a loaded machine) is run once more; a crasher never is.
# Minimizing a new input is bounded to 2 s (the default is a minute): the engine runs no input while
# it minimizes, which could take most of a 5 s run.
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($fuzztime)"
    for attempt in 1 2; do
      if go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg" > "$log" 2>&1; then
        break
      fi
      if ((attempt == 1)) && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "fuzz $pkg $t: the fuzzing engine missed its deadline (no failing input); running it again"
        continue
      fi
      cat "$log"
      status=1
      break
    done
  done
done
exit $status
